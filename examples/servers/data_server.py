"""Demo upstream: a deterministic customer/order dataset, large enough to filter in code.

Run standalone with `python examples/servers/data_server.py` (stdio).
"""

from __future__ import annotations

import random
from collections import Counter

from fastmcp import FastMCP

mcp = FastMCP("data")

_COUNTRIES = ["DE", "FR", "US", "GB", "JP", "BR", "IN", "ES"]
_STATUSES = ["paid", "shipped", "refunded", "pending"]


def _dataset() -> tuple[list[dict], list[dict]]:
    rng = random.Random(42)
    customers = [
        {
            "id": i,
            "name": f"Customer {i:03d}",
            "country": rng.choice(_COUNTRIES),
            "tier": rng.choice(["free", "pro", "enterprise"]),
        }
        for i in range(1, 201)
    ]
    orders = [
        {
            "id": 1000 + j,
            "customer_id": rng.randint(1, 200),
            "amount": round(rng.uniform(5, 900), 2),
            "status": rng.choice(_STATUSES),
        }
        for j in range(1, 1001)
    ]
    return customers, orders


CUSTOMERS, ORDERS = _dataset()


@mcp.tool
def list_customers(country: str | None = None, limit: int = 200) -> list[dict]:
    """List customers (id, name, country, tier), optionally only one country."""
    rows = [c for c in CUSTOMERS if country is None or c["country"] == country]
    return rows[:limit]


@mcp.tool
def get_customer(customer_id: int) -> dict:
    """Get one customer by id."""
    for c in CUSTOMERS:
        if c["id"] == customer_id:
            return c
    raise ValueError(f"no customer with id {customer_id}")


@mcp.tool
def list_orders(customer_id: int | None = None, status: str | None = None) -> list[dict]:
    """List orders (id, customer_id, amount, status), filtered by customer and/or status."""
    return [
        o
        for o in ORDERS
        if (customer_id is None or o["customer_id"] == customer_id)
        and (status is None or o["status"] == status)
    ]


@mcp.tool(name="order-stats")
def order_stats() -> dict:
    """Order counts per status and the total amount of paid orders."""
    counts = Counter(o["status"] for o in ORDERS)
    paid = round(sum(o["amount"] for o in ORDERS if o["status"] == "paid"), 2)
    return {"count_by_status": dict(counts), "paid_total": paid}


if __name__ == "__main__":
    mcp.run(show_banner=False)
