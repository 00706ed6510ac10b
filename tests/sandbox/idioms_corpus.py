"""Corpus of ordinary agent-style Python snippets with their exact results.

Each entry of ``IDIOMS`` is ``(id, code, expected_result)``: ``code`` is a snippet as an
LLM agent would write it while working through data returned by tools, its last
statement is an expression, and ``expected_result`` is the JSON-compatible value that
expression evaluates to under plain CPython 3.11 / 3.13 (executed as ``__main__``,
with top-level ``await`` allowed). Snippets import only json, math, re, datetime,
collections, itertools, functools, statistics, random, string, textwrap, decimal,
fractions, typing, dataclasses, enum, uuid, hashlib, base64 and asyncio (plus an
``orjson`` import guarded by ``except ImportError``), and are deterministic.
"""

IDIOMS: list[tuple[str, str, object]] = [
    # --- exceptions ---
    (
        "exc_try_except_else_finally",
        r"""log = []
def parse(raw):
    try:
        value = int(raw)
    except ValueError:
        log.append(f"bad:{raw}")
        return None
    else:
        log.append(f"ok:{value}")
        return value
    finally:
        log.append("done")

results = [parse(x) for x in ["10", "x7", "3"]]
{"results": results, "log": log}
""",
        {"results": [10, None, 3], "log": ["ok:10", "done", "bad:x7", "done", "ok:3", "done"]},
    ),
    (
        "exc_custom_super",
        r"""class ToolError(Exception):
    def __init__(self, tool, message):
        super().__init__(f"{tool}: {message}")
        self.tool = tool
        self.message = message

try:
    raise ToolError("search", "rate limited")
except ToolError as e:
    caught = {"str": str(e), "tool": e.tool, "args": list(e.args), "type": type(e).__name__}
caught
""",
        {
            "str": "search: rate limited",
            "tool": "search",
            "args": ["search: rate limited"],
            "type": "ToolError",
        },
    ),
    (
        "exc_raise_from_cause",
        r"""class ConfigError(Exception):
    pass

def load(cfg):
    try:
        return cfg["timeout"]
    except KeyError as exc:
        raise ConfigError("missing timeout") from exc

try:
    load({"retries": 3})
except ConfigError as e:
    info = [str(e), type(e.__cause__).__name__, str(e.__cause__), e.__suppress_context__]
info
""",
        ["missing timeout", "KeyError", "'timeout'", True],
    ),
    (
        "exc_hierarchy_isinstance",
        r"""class APIError(Exception):
    status = 500

class NotFound(APIError):
    status = 404

class RateLimited(APIError):
    status = 429

errors = [NotFound("user 7"), RateLimited("slow down"), ValueError("nope")]
summary = []
for err in errors:
    if isinstance(err, APIError):
        summary.append((type(err).__name__, err.status, str(err)))
    else:
        summary.append((type(err).__name__, None, str(err)))
[list(s) for s in summary] + [issubclass(NotFound, APIError), issubclass(ValueError, APIError)]
""",
        [
            ["NotFound", 404, "user 7"],
            ["RateLimited", 429, "slow down"],
            ["ValueError", None, "nope"],
            True,
            False,
        ],
    ),
    (
        "exc_multiple_except_tuple",
        r"""def risky(kind):
    if kind == "key":
        return {}["missing"]
    if kind == "index":
        return [][3]
    if kind == "zero":
        return 1 / 0
    return "fine"

outcomes = {}
for kind in ["key", "index", "zero", "none"]:
    try:
        outcomes[kind] = risky(kind)
    except (KeyError, IndexError) as e:
        outcomes[kind] = f"lookup:{type(e).__name__}"
    except ArithmeticError as e:
        outcomes[kind] = f"math:{type(e).__name__}"
outcomes
""",
        {
            "key": "lookup:KeyError",
            "index": "lookup:IndexError",
            "zero": "math:ZeroDivisionError",
            "none": "fine",
        },
    ),
    (
        "exc_retry_loop",
        r"""attempts = []

class TransientError(Exception):
    pass

def flaky_call(n):
    attempts.append(n)
    if n < 3:
        raise TransientError(f"attempt {n} failed")
    return {"status": "ok", "attempt": n}

result = None
last_error = None
for attempt in range(1, 6):
    try:
        result = flaky_call(attempt)
        break
    except TransientError as e:
        last_error = str(e)
{"result": result, "attempts": attempts, "last_error": last_error}
""",
        {
            "result": {"status": "ok", "attempt": 3},
            "attempts": [1, 2, 3],
            "last_error": "attempt 2 failed",
        },
    ),
    (
        "exc_args_and_keyerror_str",
        r"""try:
    {"a": 1}["b"]
except KeyError as e:
    key_info = {"args": list(e.args), "str": str(e), "repr": repr(e)}

try:
    raise ValueError("bad value", 42)
except ValueError as e:
    multi = {"args": list(e.args), "str": str(e)}
[key_info, multi]
""",
        [
            {"args": ["b"], "str": "'b'", "repr": "KeyError('b')"},
            {"args": ["bad value", 42], "str": "('bad value', 42)"},
        ],
    ),
    (
        "exc_reraise_bare",
        r"""seen = []

def inner():
    raise RuntimeError("boom")

def outer():
    try:
        inner()
    except RuntimeError as e:
        seen.append(f"logged {e}")
        raise

try:
    outer()
except RuntimeError as e:
    seen.append(f"outer got {e!r}")
seen
""",
        ["logged boom", "outer got RuntimeError('boom')"],
    ),
    (
        "exc_context_implicit",
        r"""try:
    try:
        int("abc")
    except ValueError:
        raise LookupError("fallback failed")
except LookupError as e:
    ctx = e.__context__
    data = {
        "cause": e.__cause__,
        "context_type": type(ctx).__name__,
        "context_msg": str(ctx),
    }
data
""",
        {
            "cause": None,
            "context_type": "ValueError",
            "context_msg": "invalid literal for int() with base 10: 'abc'",
        },
    ),
    (
        "exc_raise_from_none",
        r"""def get_port(settings):
    try:
        return int(settings["port"])
    except (KeyError, ValueError):
        raise ValueError("port must be an integer") from None

try:
    get_port({"port": "eighty"})
except ValueError as e:
    out = [str(e), e.__cause__ is None, e.__suppress_context__]
out
""",
        ["port must be an integer", True, True],
    ),
    (
        "exc_finally_return_cleanup",
        r"""class Resource:
    def __init__(self):
        self.closed = False
    def close(self):
        self.closed = True

def use(resource, fail):
    try:
        if fail:
            raise OSError("disk full")
        return "written"
    except OSError as e:
        return f"error: {e}"
    finally:
        resource.close()

r1, r2 = Resource(), Resource()
[use(r1, False), r1.closed, use(r2, True), r2.closed]
""",
        ["written", True, "error: disk full", True],
    ),
    (
        "exc_exception_with_extra_fields",
        r"""class ValidationError(Exception):
    def __init__(self, field, value, reason="invalid"):
        self.field = field
        self.value = value
        self.reason = reason
        super().__init__(f"{field}={value!r} is {reason}")

def validate(record):
    errors = []
    for field in ("name", "age"):
        try:
            if field not in record:
                raise ValidationError(field, None, "missing")
            if field == "age" and not isinstance(record[field], int):
                raise ValidationError(field, record[field], "not an int")
        except ValidationError as e:
            errors.append({"field": e.field, "message": str(e)})
    return errors

validate({"age": "ten"})
""",
        [
            {"field": "name", "message": "name=None is missing"},
            {"field": "age", "message": "age='ten' is not an int"},
        ],
    ),
    # --- classes ---
    (
        "cls_inheritance_super",
        r"""class Animal:
    def __init__(self, name):
        self.name = name
    def speak(self):
        return "..."
    def describe(self):
        return f"{self.name} says {self.speak()}"

class Dog(Animal):
    def __init__(self, name, breed):
        super().__init__(name)
        self.breed = breed
    def speak(self):
        return "woof"

class Puppy(Dog):
    def speak(self):
        return super().speak().upper() + "!"

[a.describe() for a in (Animal("generic"), Dog("rex", "lab"), Puppy("bit", "pug"))]
""",
        ["generic says ...", "rex says woof", "bit says WOOF!"],
    ),
    (
        "cls_property_setter",
        r"""class Temperature:
    def __init__(self, celsius):
        self._celsius = celsius

    @property
    def celsius(self):
        return self._celsius

    @celsius.setter
    def celsius(self, value):
        if value < -273.15:
            raise ValueError("below absolute zero")
        self._celsius = value

    @property
    def fahrenheit(self):
        return self._celsius * 9 / 5 + 32

t = Temperature(20)
t.celsius = 100
try:
    t.celsius = -300
except ValueError as e:
    err = str(e)
[t.celsius, t.fahrenheit, err]
""",
        [100, 212.0, "below absolute zero"],
    ),
    (
        "cls_classmethod_staticmethod",
        r"""class User:
    count = 0

    def __init__(self, name, email):
        self.name = name
        self.email = email
        User.count += 1

    @classmethod
    def from_dict(cls, data):
        return cls(data["name"], data["email"])

    @staticmethod
    def is_valid_email(email):
        return "@" in email and "." in email.split("@")[-1]

users = [User.from_dict(d) for d in [{"name": "ann", "email": "ann@x.io"}, {"name": "bo", "email": "bo@bad"}]]
[User.count, [User.is_valid_email(u.email) for u in users], type(users[0]).__name__]
""",
        [2, [True, False], "User"],
    ),
    (
        "cls_repr_eq_hash",
        r"""class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y
    def __repr__(self):
        return f"Point({self.x}, {self.y})"
    def __eq__(self, other):
        if not isinstance(other, Point):
            return NotImplemented
        return (self.x, self.y) == (other.x, other.y)
    def __hash__(self):
        return hash((self.x, self.y))

pts = [Point(1, 2), Point(1, 2), Point(3, 4)]
unique = set(pts)
[repr(pts[0]), pts[0] == pts[1], pts[0] is pts[1], len(unique), Point(0, 0) == (0, 0)]
""",
        ["Point(1, 2)", True, False, 2, False],
    ),
    (
        "cls_lt_sorting",
        r"""class Version:
    def __init__(self, text):
        self.text = text
        self.parts = tuple(int(p) for p in text.split("."))
    def __lt__(self, other):
        return self.parts < other.parts
    def __repr__(self):
        return f"Version({self.text!r})"

versions = [Version(v) for v in ["1.10.0", "1.2.3", "1.2.10", "0.9"]]
[v.text for v in sorted(versions)] + [max(versions).text]
""",
        ["0.9", "1.2.3", "1.2.10", "1.10.0", "1.10.0"],
    ),
    (
        "cls_slots",
        r"""class Vec:
    __slots__ = ("x", "y")
    def __init__(self, x, y):
        self.x = x
        self.y = y
    def norm2(self):
        return self.x ** 2 + self.y ** 2

v = Vec(3, 4)
try:
    v.z = 5
    err = None
except AttributeError as e:
    err = type(e).__name__
[v.norm2(), err, list(Vec.__slots__), hasattr(v, "__dict__")]
""",
        [25, "AttributeError", ["x", "y"], False],
    ),
    (
        "cls_class_vs_instance_attr",
        r"""class Counter:
    instances = 0
    default_step = 1

    def __init__(self, step=None):
        Counter.instances += 1
        if step is not None:
            self.default_step = step
        self._value = 0

    def tick(self):
        self._value += self.default_step
        return self._value

a, b = Counter(), Counter(step=5)
a.tick(); a.tick(); b.tick()
[Counter.instances, a._value, b._value, Counter.default_step, b.default_step]
""",
        [2, 2, 5, 1, 5],
    ),
    (
        "cls_abstract_like_base",
        r"""class Shape:
    def area(self):
        raise NotImplementedError(f"{type(self).__name__}.area")
    def __str__(self):
        return f"{self.__class__.__name__}(area={self.area():.2f})"

class Rect(Shape):
    def __init__(self, w, h):
        self.w, self.h = w, h
    def area(self):
        return self.w * self.h

class Square(Rect):
    def __init__(self, side):
        super().__init__(side, side)

class Blob(Shape):
    pass

out = [str(s) for s in (Rect(2, 3.5), Square(3))]
try:
    str(Blob())
except NotImplementedError as e:
    out.append(str(e))
out + [isinstance(Square(1), Shape), issubclass(Blob, Rect)]
""",
        ["Rect(area=7.00)", "Square(area=9.00)", "Blob.area", True, False],
    ),
    (
        "cls_dunder_len_iter_getitem",
        r"""class Inventory:
    def __init__(self):
        self._items = {}
    def add(self, name, qty=1):
        self._items[name] = self._items.get(name, 0) + qty
        return self
    def __len__(self):
        return len(self._items)
    def __iter__(self):
        return iter(sorted(self._items))
    def __getitem__(self, name):
        return self._items[name]
    def __contains__(self, name):
        return name in self._items

inv = Inventory().add("apple", 3).add("pear").add("apple", 2)
[len(inv), list(inv), inv["apple"], "pear" in inv, "kiwi" in inv]
""",
        [2, ["apple", "pear"], 5, True, False],
    ),
    (
        "cls_mixin_mro",
        r"""class JsonMixin:
    def to_dict(self):
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}

class Base:
    def __init__(self, ident):
        self.ident = ident
        self._secret = "hidden"

class Item(JsonMixin, Base):
    def __init__(self, ident, label):
        super().__init__(ident)
        self.label = label

it = Item(7, "widget")
[it.to_dict(), [c.__name__ for c in Item.__mro__]]
""",
        [{"ident": 7, "label": "widget"}, ["Item", "JsonMixin", "Base", "object"]],
    ),
    # --- records ---
    (
        "dc_basic_asdict",
        r"""from dataclasses import dataclass, field, asdict

@dataclass
class Task:
    title: str
    priority: int = 3
    tags: list[str] = field(default_factory=list)

t = Task("write report", tags=["work"])
t.tags.append("urgent")
[asdict(t), repr(Task("x")), Task("a") == Task("a")]
""",
        [
            {"title": "write report", "priority": 3, "tags": ["work", "urgent"]},
            "Task(title='x', priority=3, tags=[])",
            True,
        ],
    ),
    (
        "dc_frozen_replace",
        r"""from dataclasses import dataclass, replace, FrozenInstanceError

@dataclass(frozen=True)
class Config:
    host: str
    port: int = 8080

base = Config("localhost")
prod = replace(base, host="api.example.com", port=443)
try:
    base.port = 1
except FrozenInstanceError as e:
    err = type(e).__name__
[repr(base), repr(prod), err, hash(base) == hash(Config("localhost"))]
""",
        [
            "Config(host='localhost', port=8080)",
            "Config(host='api.example.com', port=443)",
            "FrozenInstanceError",
            True,
        ],
    ),
    (
        "dc_order_sorting",
        r"""from dataclasses import dataclass, field

@dataclass(order=True)
class Job:
    priority: int
    name: str = field(compare=False)

jobs = [Job(3, "backup"), Job(1, "deploy"), Job(2, "test"), Job(1, "alert")]
[j.name for j in sorted(jobs)] + [Job(1, "x") < Job(2, "a"), Job(1, "x") == Job(1, "y")]
""",
        ["deploy", "alert", "test", "backup", True, True],
    ),
    (
        "dc_post_init",
        r"""from dataclasses import dataclass, field

@dataclass
class LineItem:
    sku: str
    qty: int
    unit_price: float
    total: float = field(init=False)

    def __post_init__(self):
        if self.qty < 0:
            raise ValueError(f"negative qty for {self.sku}")
        self.sku = self.sku.upper()
        self.total = round(self.qty * self.unit_price, 2)

items = [LineItem("ab-1", 3, 2.5), LineItem("cd-2", 1, 9.99)]
try:
    LineItem("zz", -1, 1.0)
except ValueError as e:
    msg = str(e)
[[i.sku for i in items], round(sum(i.total for i in items), 2), msg]
""",
        [["AB-1", "CD-2"], 17.49, "negative qty for zz"],
    ),
    (
        "dc_fields_introspection",
        r"""from dataclasses import dataclass, field, fields, is_dataclass

@dataclass
class Record:
    id: int
    name: str
    score: float = 0.0
    notes: dict = field(default_factory=dict)

r = Record(1, "alpha", notes={"k": "v"})
[[f.name for f in fields(Record)], is_dataclass(r), is_dataclass(dict), {f.name: getattr(r, f.name) for f in fields(r)}]
""",
        [
            ["id", "name", "score", "notes"],
            True,
            False,
            {"id": 1, "name": "alpha", "score": 0.0, "notes": {"k": "v"}},
        ],
    ),
    (
        "dc_future_annotations_nested",
        r"""from __future__ import annotations
from dataclasses import dataclass, field, asdict
from typing import Optional

@dataclass
class Address:
    city: str
    zip: Optional[str] = None

@dataclass
class Person:
    name: str
    address: Address
    emails: list[str] = field(default_factory=list)

p = Person("Ana", Address("Lisbon"), ["ana@x.pt"])
asdict(p)
""",
        {"name": "Ana", "address": {"city": "Lisbon", "zip": None}, "emails": ["ana@x.pt"]},
    ),
    (
        "nt_collections_namedtuple",
        r"""from collections import namedtuple

Row = namedtuple("Row", ["id", "name", "score"], defaults=[0.0])
rows = [Row(1, "a", 9.5), Row(2, "b"), Row._make([3, "c", 7.25])]
best = max(rows, key=lambda r: r.score)
updated = rows[1]._replace(score=8.0)
[list(Row._fields), best._asdict(), list(updated), rows[2].name, list(Row._field_defaults.items())[0][0]]
""",
        [
            ["id", "name", "score"],
            {"id": 1, "name": "a", "score": 9.5},
            [2, "b", 8.0],
            "c",
            "score",
        ],
    ),
    (
        "nt_typing_namedtuple",
        r"""from typing import NamedTuple

class Coordinate(NamedTuple):
    lat: float
    lon: float
    label: str = "unknown"

    def as_text(self):
        return f"{self.label}@{self.lat:.3f},{self.lon:.3f}"

c = Coordinate(38.7223, -9.1393, "Lisbon")
lat, lon, _ = c
[c.as_text(), lat, list(c._fields), c._asdict()["label"], isinstance(c, tuple), Coordinate(1, 2).label]
""",
        ["Lisbon@38.722,-9.139", 38.7223, ["lat", "lon", "label"], "Lisbon", True, "unknown"],
    ),
    (
        "typeddict_usage",
        r"""from typing import TypedDict, NotRequired

class Movie(TypedDict):
    title: str
    year: int
    rating: NotRequired[float]

movies: list[Movie] = [
    {"title": "Alien", "year": 1979, "rating": 8.5},
    {"title": "Heat", "year": 1995},
]
rated = [m["title"] for m in movies if "rating" in m]
[rated, sorted(Movie.__required_keys__), sorted(Movie.__optional_keys__), type(movies[0]).__name__]
""",
        [["Alien"], ["title", "year"], ["rating"], "dict"],
    ),
    (
        "enum_basic_auto",
        r"""from enum import Enum, auto

class Status(Enum):
    PENDING = auto()
    RUNNING = auto()
    DONE = auto()

s = Status["RUNNING"]
[s.name, s.value, Status(3).name, [m.name for m in Status], Status.DONE is Status.DONE, str(Status.PENDING), repr(s)]
""",
        [
            "RUNNING",
            2,
            "DONE",
            ["PENDING", "RUNNING", "DONE"],
            True,
            "Status.PENDING",
            "<Status.RUNNING: 2>",
        ],
    ),
    (
        "enum_intenum_compare",
        r"""from enum import IntEnum

class Priority(IntEnum):
    LOW = 1
    MEDIUM = 5
    HIGH = 10

tasks = [("email", Priority.LOW), ("deploy", Priority.HIGH), ("review", Priority.MEDIUM)]
ordered = [name for name, p in sorted(tasks, key=lambda t: t[1], reverse=True)]
[ordered, Priority.HIGH > Priority.MEDIUM, Priority.LOW + 1, Priority(5).name, int(Priority.HIGH)]
""",
        [["deploy", "review", "email"], True, 2, "MEDIUM", 10],
    ),
    (
        "enum_strenum_flag",
        r"""from enum import StrEnum, Flag, auto

class Method(StrEnum):
    GET = auto()
    POST = auto()

class Perm(Flag):
    READ = auto()
    WRITE = auto()
    EXEC = auto()

rw = Perm.READ | Perm.WRITE
[str(Method.GET), Method.POST == "post", f"{Method.GET}", Perm.WRITE in rw, Perm.EXEC in rw, rw.value]
""",
        ["get", True, "get", True, False, 3],
    ),
    # --- introspection ---
    (
        "intro_names",
        r"""import json

def fetch_user(uid):
    return {"id": uid}

class Client:
    def get(self):
        return None

c = Client()
[fetch_user.__name__, c.__class__.__name__, type(c).__name__, Client.get.__qualname__, type(3.0).__name__, type(None).__name__, json.dumps.__name__]
""",
        ["fetch_user", "Client", "Client", "Client.get", "float", "NoneType", "dumps"],
    ),
    (
        "intro_getattr_hasattr_callable",
        r"""class Response:
    status = 200
    def json(self):
        return {"ok": True}

r = Response()
checks = {
    "status": getattr(r, "status", None),
    "headers": getattr(r, "headers", {}),
    "has_json": hasattr(r, "json"),
    "json_callable": callable(getattr(r, "json", None)),
    "status_callable": callable(r.status),
    "payload": getattr(r, "json")(),
}
checks
""",
        {
            "status": 200,
            "headers": {},
            "has_json": True,
            "json_callable": True,
            "status_callable": False,
            "payload": {"ok": True},
        },
    ),
    (
        "intro_dir_public",
        r"""class Service:
    version = "1.0"
    def __init__(self):
        self._cache = {}
        self.name = "svc"
    def start(self):
        pass
    def _internal(self):
        pass

s = Service()
public = [n for n in dir(s) if not n.startswith("_")]
methods = [n for n in public if callable(getattr(s, n))]
[public, methods]
""",
        [["name", "start", "version"], ["start"]],
    ),
    (
        "intro_dispatch_by_type_name",
        r"""values = [1, "two", 3.0, [4], {"five": 5}, None, (6,), True]
by_type = {}
for v in values:
    by_type.setdefault(type(v).__name__, []).append(v if not isinstance(v, tuple) else list(v))
by_type
""",
        {
            "int": [1],
            "str": ["two"],
            "float": [3.0],
            "list": [[4]],
            "dict": [{"five": 5}],
            "NoneType": [None],
            "tuple": [[6]],
            "bool": [True],
        },
    ),
    # --- main_guard ---
    (
        "main_guard_basic",
        r"""def main():
    data = [3, 1, 2]
    return sorted(data)

output = None
if __name__ == "__main__":
    output = main()
output
""",
        [1, 2, 3],
    ),
    (
        "main_guard_with_report",
        r"""import json

def summarize(records):
    return {"count": len(records), "total": sum(r["amount"] for r in records)}

def main():
    records = [{"amount": 12}, {"amount": 30}, {"amount": 8}]
    return json.dumps(summarize(records), sort_keys=True)

if __name__ == "__main__":
    report = main()
else:
    report = "imported"
report
""",
        '{"count": 3, "total": 50}',
    ),
    # --- decorators ---
    (
        "deco_wraps_logging",
        r"""import functools

calls = []

def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        calls.append(f"{fn.__name__}{args}")
        return fn(*args, **kwargs)
    return wrapper

@logged
def add(a, b):
    '''Add two numbers.'''
    return a + b

[add(2, 3), add(4, 5), calls, add.__name__, add.__doc__, add.__wrapped__(1, 1)]
""",
        [5, 9, ["add(2, 3)", "add(4, 5)"], "add", "Add two numbers.", 2],
    ),
    (
        "deco_with_args_retry",
        r"""from functools import wraps

def retry(times=3, exceptions=(Exception,)):
    def decorator(fn):
        @wraps(fn)
        def wrapper(*args, **kwargs):
            last = None
            for _ in range(times):
                try:
                    return fn(*args, **kwargs)
                except exceptions as e:
                    last = e
            raise RuntimeError(f"{fn.__name__} failed after {times} tries") from last
        return wrapper
    return decorator

state = {"n": 0}

@retry(times=4, exceptions=(ConnectionError,))
def connect():
    state["n"] += 1
    if state["n"] < 3:
        raise ConnectionError("refused")
    return f"connected on try {state['n']}"
[connect(), state["n"], connect.__name__]
""",
        ["connected on try 3", 3, "connect"],
    ),
    (
        "deco_retry_exhausted_cause",
        r"""import functools

def retry(times):
    def decorator(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            errors = []
            for _ in range(times):
                try:
                    return fn(*args, **kwargs)
                except Exception as e:
                    errors.append(str(e))
            raise RuntimeError(f"{fn.__name__} failed {times}x: {errors}") from ValueError(errors[-1])
        return wrapper
    return decorator

@retry(times=2)
def always_fails():
    raise ValueError("nope")

try:
    always_fails()
except RuntimeError as e:
    err = [str(e), type(e.__cause__).__name__, str(e.__cause__)]
err
""",
        ["always_fails failed 2x: ['nope', 'nope']", "ValueError", "nope"],
    ),
    (
        "deco_registry",
        r"""HANDLERS = {}

def handler(event):
    def register(fn):
        HANDLERS[event] = fn
        return fn
    return register

@handler("created")
def on_created(payload):
    return f"new {payload['kind']}"

@handler("deleted")
def on_deleted(payload):
    return f"removed {payload['kind']}"

events = [("created", {"kind": "file"}), ("deleted", {"kind": "dir"}), ("moved", {"kind": "x"})]
[HANDLERS[e](p) if e in HANDLERS else f"unhandled {e}" for e, p in events]
""",
        ["new file", "removed dir", "unhandled moved"],
    ),
    # --- iteration ---
    (
        "gen_pagination",
        r"""def paginate(items, size):
    for start in range(0, len(items), size):
        yield items[start:start + size]

pages = list(paginate(list(range(1, 11)), 4))
gen = paginate(["a", "b", "c"], 2)
first = next(gen)
[pages, first, next(gen), next(gen, "exhausted")]
""",
        [[[1, 2, 3, 4], [5, 6, 7, 8], [9, 10]], ["a", "b"], ["c"], "exhausted"],
    ),
    (
        "gen_yield_from_flatten",
        r"""def flatten(obj):
    if isinstance(obj, (list, tuple)):
        for item in obj:
            yield from flatten(item)
    elif isinstance(obj, dict):
        for value in obj.values():
            yield from flatten(value)
    else:
        yield obj

nested = {"a": [1, [2, 3]], "b": {"c": (4, 5), "d": 6}, "e": []}
list(flatten(nested))
""",
        [1, 2, 3, 4, 5, 6],
    ),
    (
        "itertools_groupby_sorted",
        r"""from itertools import groupby

rows = [
    {"team": "b", "user": "x", "pts": 3},
    {"team": "a", "user": "y", "pts": 5},
    {"team": "b", "user": "z", "pts": 7},
    {"team": "a", "user": "w", "pts": 1},
]
rows.sort(key=lambda r: r["team"])
{team: sum(r["pts"] for r in group) for team, group in groupby(rows, key=lambda r: r["team"])}
""",
        {"a": 6, "b": 10},
    ),
    (
        "itertools_misc",
        r"""import itertools as it

chained = list(it.chain([1, 2], (3,), range(4, 6)))
pairs = list(it.combinations("abc", 2))
prod = list(it.product([0, 1], repeat=2))
running = list(it.accumulate([3, 1, 4, 1, 5]))
batched = [list(b) for b in it.zip_longest(*[iter(range(7))] * 3, fillvalue=None)]
window = list(zip(chained, chained[1:]))
head = list(it.islice(it.count(10, 5), 4))
cyc = list(it.islice(it.cycle("xy"), 5))
[chained, ["".join(p) for p in pairs], [list(p) for p in prod], running, batched, [list(w) for w in window], head, cyc]
""",
        [
            [1, 2, 3, 4, 5],
            ["ab", "ac", "bc"],
            [[0, 0], [0, 1], [1, 0], [1, 1]],
            [3, 4, 8, 9, 14],
            [[0, 1, 2], [3, 4, 5], [6, None, None]],
            [[1, 2], [2, 3], [3, 4], [4, 5]],
            [10, 15, 20, 25],
            ["x", "y", "x", "y", "x"],
        ],
    ),
    (
        "sort_multi_key_stability",
        r"""people = [
    ("ann", 31, "nyc"), ("bob", 25, "sf"), ("cat", 31, "sf"),
    ("dan", 25, "nyc"), ("eve", 40, "sf"), ("fay", 31, "nyc"),
]
by_age = sorted(people, key=lambda p: p[1])
by_city_then_age_desc = sorted(people, key=lambda p: (p[2], -p[1]))
stable = sorted(sorted(people, key=lambda p: p[0], reverse=True), key=lambda p: p[1])
[[p[0] for p in by_age], [p[0] for p in by_city_then_age_desc], [p[0] for p in stable]]
""",
        [
            ["bob", "dan", "ann", "cat", "fay", "eve"],
            ["ann", "fay", "dan", "eve", "cat", "bob"],
            ["dan", "bob", "fay", "cat", "ann", "eve"],
        ],
    ),
    (
        "enumerate_zip_strict",
        r"""names = ["alpha", "beta", "gamma"]
scores = [0.9, 0.75, 0.6]
table = [f"{i}. {n}: {s:.0%}" for i, (n, s) in enumerate(zip(names, scores), start=1)]
try:
    list(zip(names, scores[:2], strict=True))
except ValueError as e:
    err = type(e).__name__
[table, err, dict(zip(names, scores))["beta"]]
""",
        [["1. alpha: 90%", "2. beta: 75%", "3. gamma: 60%"], "ValueError", 0.75],
    ),
    (
        "gen_expression_any_all_next",
        r"""servers = [
    {"host": "a", "up": True, "load": 0.7},
    {"host": "b", "up": False, "load": 0.0},
    {"host": "c", "up": True, "load": 0.2},
]
all_up = all(s["up"] for s in servers)
any_idle = any(s["load"] < 0.3 and s["up"] for s in servers)
first_idle = next((s["host"] for s in servers if s["up"] and s["load"] < 0.5), None)
missing = next((s for s in servers if s["host"] == "z"), None)
total_load = sum(s["load"] for s in servers if s["up"])
[all_up, any_idle, first_idle, missing, round(total_load, 2)]
""",
        [False, True, "c", None, 0.9],
    ),
    # --- munging ---
    (
        "munge_filter_project",
        r"""results = [
    {"id": 1, "title": "Fix bug", "state": "open", "labels": ["bug"], "assignee": {"login": "ann"}},
    {"id": 2, "title": "Add docs", "state": "closed", "labels": [], "assignee": None},
    {"id": 3, "title": "Crash", "state": "open", "labels": ["bug", "p1"], "assignee": None},
]
open_bugs = [
    {"id": r["id"], "title": r["title"], "who": (r.get("assignee") or {}).get("login", "unassigned")}
    for r in results
    if r["state"] == "open" and "bug" in r["labels"]
]
open_bugs
""",
        [
            {"id": 1, "title": "Fix bug", "who": "ann"},
            {"id": 3, "title": "Crash", "who": "unassigned"},
        ],
    ),
    (
        "munge_group_count_dict",
        r"""orders = [
    {"customer": "acme", "amount": 120.0, "status": "paid"},
    {"customer": "globex", "amount": 80.5, "status": "pending"},
    {"customer": "acme", "amount": 42.25, "status": "paid"},
    {"customer": "initech", "amount": 300.0, "status": "refunded"},
    {"customer": "globex", "amount": 19.5, "status": "paid"},
]
totals = {}
for o in orders:
    if o["status"] != "refunded":
        totals[o["customer"]] = totals.get(o["customer"], 0) + o["amount"]
ranked = sorted(totals.items(), key=lambda kv: kv[1], reverse=True)
{"totals": totals, "top": ranked[0][0], "statuses": sorted({o["status"] for o in orders})}
""",
        {
            "totals": {"acme": 162.25, "globex": 100.0},
            "top": "acme",
            "statuses": ["paid", "pending", "refunded"],
        },
    ),
    (
        "munge_nested_flatten_keys",
        r"""def flatten(d, prefix=""):
    out = {}
    for k, v in d.items():
        key = f"{prefix}.{k}" if prefix else k
        if isinstance(v, dict):
            out.update(flatten(v, key))
        else:
            out[key] = v
    return out

payload = {"user": {"id": 9, "profile": {"name": "Zed", "langs": ["py", "go"]}}, "active": True}
flatten(payload)
""",
        {
            "user.id": 9,
            "user.profile.name": "Zed",
            "user.profile.langs": ["py", "go"],
            "active": True,
        },
    ),
    (
        "munge_join_two_lists",
        r"""users = [{"id": 1, "name": "ann"}, {"id": 2, "name": "bob"}, {"id": 3, "name": "cy"}]
posts = [{"user_id": 1, "title": "p1"}, {"user_id": 3, "title": "p2"}, {"user_id": 1, "title": "p3"}, {"user_id": 4, "title": "orphan"}]
by_id = {u["id"]: u for u in users}
joined = [{**p, "author": by_id[p["user_id"]]["name"]} for p in posts if p["user_id"] in by_id]
post_counts = {u["name"]: sum(1 for p in posts if p["user_id"] == u["id"]) for u in users}
[joined, post_counts]
""",
        [
            [
                {"user_id": 1, "title": "p1", "author": "ann"},
                {"user_id": 3, "title": "p2", "author": "cy"},
                {"user_id": 1, "title": "p3", "author": "ann"},
            ],
            {"ann": 2, "bob": 0, "cy": 1},
        ],
    ),
    (
        "munge_dedupe_preserve_order",
        r"""urls = ["https://a.io/x", "https://b.io", "https://a.io/x", "https://c.io", "https://b.io"]
unique = list(dict.fromkeys(urls))
seen = set()
first_per_domain = []
for u in urls:
    domain = u.split("/")[2]
    if domain not in seen:
        seen.add(domain)
        first_per_domain.append(domain)
[unique, first_per_domain, len(set(urls))]
""",
        [["https://a.io/x", "https://b.io", "https://c.io"], ["a.io", "b.io", "c.io"], 3],
    ),
    (
        "munge_pivot_matrix",
        r"""data = [
    ("2024-01", "north", 10), ("2024-01", "south", 7),
    ("2024-02", "north", 12), ("2024-02", "east", 3),
]
months = sorted({m for m, _, _ in data})
regions = sorted({r for _, r, _ in data})
lookup = {(m, r): v for m, r, v in data}
table = [[m] + [lookup.get((m, r), 0) for r in regions] for m in months]
col_totals = {r: sum(lookup.get((m, r), 0) for m in months) for r in regions}
{"header": ["month"] + regions, "rows": table, "totals": col_totals}
""",
        {
            "header": ["month", "east", "north", "south"],
            "rows": [["2024-01", 0, 10, 7], ["2024-02", 3, 12, 0]],
            "totals": {"east": 3, "north": 22, "south": 7},
        },
    ),
    (
        "munge_safe_get_chain",
        r"""resp = {"data": {"items": [{"meta": {"tags": ["a", "b"]}}, {"meta": None}, {}]}}
tags = []
for item in resp.get("data", {}).get("items", []):
    meta = item.get("meta") or {}
    tags.extend(meta.get("tags", []))
count = len(resp.get("data", {}).get("items", []))
missing = resp.get("errors", [{}])[0].get("message", "no error")
[tags, count, missing]
""",
        [["a", "b"], 3, "no error"],
    ),
    # --- strings ---
    (
        "fmt_fstring_specs",
        r"""name, qty, price, ratio = "widget", 7, 3.14159, 0.4567
lines = [
    f"{name:>10}|",
    f"{name:<10}|",
    f"{name:^10}|",
    f"{price:.2f}",
    f"{qty:03d}",
    f"{ratio:.1%}",
    f"{1234567.891:,.2f}",
    f"{255:#x} {255:b} {255:o}",
    f"{qty=}",
    f"{name!r:>12}",
]
lines
""",
        [
            "    widget|",
            "widget    |",
            "  widget  |",
            "3.14",
            "007",
            "45.7%",
            "1,234,567.89",
            "0xff 11111111 377",
            "qty=7",
            "    'widget'",
        ],
    ),
    (
        "fmt_str_format_fields",
        r"""row = {"name": "Ada", "lang": "Python", "years": 12}
a = "{} writes {}".format("Ada", "Python")
b = "{1} <- {0}".format("src", "dst")
c = "{name} has {years} years of {lang}".format(**row)
d = "{0[name]}/{0[lang]}".format(row)
e = "{:>8}|{:<6}|{:^7}|".format("right", "left", "mid")
f = "{:.3f} {:+d} {:e}".format(2 / 3, 5, 12345.678)
g = "{:*^15}".format(" title ")
[a, b, c, d, e, f, g]
""",
        [
            "Ada writes Python",
            "dst <- src",
            "Ada has 12 years of Python",
            "Ada/Python",
            "   right|left  |  mid  |",
            "0.667 +5 1.234568e+04",
            "**** title ****",
        ],
    ),
    (
        "fmt_table_report",
        r"""rows = [("apples", 3, 1.2), ("kiwis", 12, 0.35), ("watermelon", 1, 4.0)]
width = max(len(r[0]) for r in rows)
out = [f"{'item':<{width}}  {'qty':>3}  {'total':>7}"]
for item, qty, unit in rows:
    out.append(f"{item:<{width}}  {qty:>3}  {qty * unit:>7.2f}")
out.append("-" * len(out[0]))
out.append(f"{'TOTAL':<{width}}  {sum(r[1] for r in rows):>3}  {sum(r[1] * r[2] for r in rows):>7.2f}")
"\n".join(out)
""",
        "item        qty    total\napples        3     3.60\nkiwis        12     4.20\nwatermelon    1     4.00\n------------------------\nTOTAL        16    11.80",
    ),
    (
        "textwrap_fill_shorten_dedent",
        r"""import textwrap

text = "The quick brown fox jumps over the lazy dog and keeps running far away."
wrapped = textwrap.wrap(text, width=20)
short = textwrap.shorten(text, width=30, placeholder="...")
block = textwrap.dedent('''
    def f():
        return 1
''').strip()
indented = textwrap.indent("a\nb", "> ")
[wrapped, short, block, indented, textwrap.fill("one two three", width=8)]
""",
        [
            ["The quick brown fox", "jumps over the lazy", "dog and keeps", "running far away."],
            "The quick brown fox jumps...",
            "def f():\n    return 1",
            "> a\n> b",
            "one two\nthree",
        ],
    ),
    (
        "str_methods_cleanup",
        r"""import string

raw = "  Hello, World!  \n"
slug_src = "My Report: Q3 / 2024 (final)"
slug = "".join(ch if ch in string.ascii_lowercase + string.digits else "-" for ch in slug_src.lower())
slug = "-".join(part for part in slug.split("-") if part)
[
    raw.strip(), raw.strip().lower().rstrip("!"), "a,b,,c".split(","), "a b  c".split(),
    list("k=v=w".partition("=")), "report.final.pdf".rsplit(".", 1), "abc".zfill(6),
    "Title Case words".swapcase(), slug, "x".join("123"), "prefix_name".removeprefix("prefix_"),
]
""",
        [
            "Hello, World!",
            "hello, world",
            ["a", "b", "", "c"],
            ["a", "b", "c"],
            ["k", "=", "v=w"],
            ["report.final", "pdf"],
            "000abc",
            "tITLE cASE WORDS",
            "my-report-q3-2024-final",
            "1x2x3",
            "name",
        ],
    ),
    # --- regex ---
    (
        "re_log_parse_named_groups",
        r"""import re

LOG = re.compile(r"(?P<ts>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}) \[(?P<level>[A-Z]+)\] (?P<msg>.*)")
lines = [
    "2024-05-01 12:00:01 [INFO] service started",
    "garbage line",
    "2024-05-01 12:00:09 [ERROR] db timeout after 30s",
]
parsed = [m.groupdict() for line in lines if (m := LOG.match(line))]
errors = [p["msg"] for p in parsed if p["level"] == "ERROR"]
[len(parsed), parsed[0]["ts"], errors, re.search(r"(\d+)s$", errors[0]).group(1)]
""",
        [2, "2024-05-01 12:00:01", ["db timeout after 30s"], "30"],
    ),
    (
        "re_findall_sub_split",
        r"""import re

text = "Contact: ann@example.com, bob.smith@work.org; phone +1-555-0100 or 555-0199."
emails = re.findall(r"[\w.+-]+@[\w-]+\.\w+", text)
phones = re.findall(r"(?:\+\d-)?\d{3}-\d{4}", text)
redacted = re.sub(r"([\w.+-]+)@", lambda m: m.group(1)[0] + "***@", text)
parts = re.split(r"[,;]\s*", "a, b;c ,d")
domains = [re.sub(r"^.*@", "", e) for e in emails]
[emails, phones, redacted, parts, domains]
""",
        [
            ["ann@example.com", "bob.smith@work.org"],
            ["+1-555-0100", "555-0199"],
            "Contact: a***@example.com, b***@work.org; phone +1-555-0100 or 555-0199.",
            ["a", "b", "c ", "d"],
            ["example.com", "work.org"],
        ],
    ),
    (
        "re_finditer_spans_flags",
        r"""import re

doc = "TODO: fix parser\nnote: fine\ntodo: add tests\nFIXME later"
pattern = re.compile(r"^(todo|fixme):?\s*(.*)$", re.IGNORECASE | re.MULTILINE)
items = [(m.group(1).upper(), m.group(2), m.start()) for m in pattern.finditer(doc)]
full = bool(re.fullmatch(r"[a-z_][a-z0-9_]*", "valid_name1"))
not_full = re.fullmatch(r"\d+", "12a") is None
[[list(i) for i in items], full, not_full, pattern.pattern[:6]]
""",
        [
            [["TODO", "fix parser", 0], ["TODO", "add tests", 28], ["FIXME", "later", 44]],
            True,
            True,
            "^(todo",
        ],
    ),
    # --- json ---
    (
        "json_round_trip",
        r"""import json

payload = {"id": 7, "tags": ["a", "b"], "meta": {"score": 0.5, "ok": True, "none": None}, "pair": (1, 2)}
text = json.dumps(payload, sort_keys=True)
back = json.loads(text)
pretty = json.dumps({"b": 1, "a": [1, 2]}, indent=2, sort_keys=True)
[text, back["pair"], back == payload, pretty.splitlines()]
""",
        [
            '{"id": 7, "meta": {"none": null, "ok": true, "score": 0.5}, "pair": [1, 2], "tags": ["a", "b"]}',
            [1, 2],
            False,
            ["{", '  "a": [', "    1,", "    2", "  ],", '  "b": 1', "}"],
        ],
    ),
    (
        "json_custom_encoder_default",
        r"""import json
from datetime import date
from decimal import Decimal

def default(o):
    if isinstance(o, date):
        return o.isoformat()
    if isinstance(o, Decimal):
        return str(o)
    if isinstance(o, set):
        return sorted(o)
    raise TypeError(f"not serializable: {type(o).__name__}")

doc = {"when": date(2024, 2, 29), "price": Decimal("9.90"), "tags": {"z", "a"}}
out = json.dumps(doc, default=default)
try:
    json.dumps({"x": object()}, default=default)
except TypeError as e:
    err = str(e)
[out, err]
""",
        ['{"when": "2024-02-29", "price": "9.90", "tags": ["a", "z"]}', "not serializable: object"],
    ),
    (
        "json_decode_error_handling",
        r"""import json

raw_responses = ['{"ok": true, "n": 3}', '{"ok": tru', '[1, 2, 3]', '']
parsed = []
for raw in raw_responses:
    try:
        parsed.append(json.loads(raw))
    except json.JSONDecodeError as e:
        parsed.append({"error": type(e).__name__, "pos": e.pos, "line": e.lineno})
parsed
""",
        [
            {"ok": True, "n": 3},
            {"error": "JSONDecodeError", "pos": 7, "line": 1},
            [1, 2, 3],
            {"error": "JSONDecodeError", "pos": 0, "line": 1},
        ],
    ),
    (
        "import_fallback_orjson",
        r"""try:
    import orjson as j
except ImportError:
    import json as j

raw = '{"items": [{"id": 1, "v": 2.5}, {"id": 2, "v": 4.0}]}'
data = j.loads(raw)
total = sum(item["v"] for item in data["items"])
encoded = j.dumps({"total": total})
text = encoded.decode() if isinstance(encoded, bytes) else encoded
[total, text.replace(" ", ""), [i["id"] for i in data["items"]]]
""",
        [6.5, '{"total":6.5}', [1, 2]],
    ),
    (
        "import_fallback_from_import",
        r"""try:
    from orjson import loads as fast_loads
    BACKEND = "orjson"
except ImportError:
    from json import loads as fast_loads
    BACKEND = "json"

def parse_lines(text):
    return [fast_loads(line) for line in text.splitlines() if line.strip()]

records = parse_lines('{"a": [1, 2]}\n\n3\n"s"\n')
[records, callable(fast_loads), BACKEND in ("orjson", "json")]
""",
        [[{"a": [1, 2]}, 3, "s"], True, True],
    ),
    # --- datetime ---
    (
        "dt_arithmetic_fixed",
        r"""from datetime import datetime, date, timedelta

start = datetime(2024, 2, 27, 22, 30)
end = start + timedelta(days=3, hours=4)
delta = end - start
deadline = date(2024, 12, 25)
today = date(2024, 11, 1)
[end.isoformat(), delta.total_seconds(), str(delta), (deadline - today).days, end.strftime("%Y-%m-%d %H:%M"), date(2024, 3, 1).weekday()]
""",
        ["2024-03-02T02:30:00", 273600.0, "3 days, 4:00:00", 54, "2024-03-02 02:30", 4],
    ),
    (
        "dt_parse_format",
        r"""from datetime import datetime, timezone, timedelta

stamps = ["2024-06-01T08:15:00+00:00", "2024-06-01T10:00:00+02:00", "2024-05-31T23:59:00Z"]
parsed = [datetime.fromisoformat(s) for s in stamps]
utc = sorted(p.astimezone(timezone.utc) for p in parsed)
custom = datetime.strptime("03/15/2023 14:05", "%m/%d/%Y %H:%M")
est = timezone(timedelta(hours=-5), "EST")
[[u.isoformat() for u in utc], custom.isoformat(), custom.replace(tzinfo=est).isoformat(), custom.strftime("%A %d %B %Y"), parsed[1].utcoffset().total_seconds()]
""",
        [
            ["2024-05-31T23:59:00+00:00", "2024-06-01T08:00:00+00:00", "2024-06-01T08:15:00+00:00"],
            "2023-03-15T14:05:00",
            "2023-03-15T14:05:00-05:00",
            "Wednesday 15 March 2023",
            7200.0,
        ],
    ),
    (
        "dt_bucket_by_week",
        r"""from datetime import date, timedelta
from collections import Counter

events = [date(2024, 1, 1) + timedelta(days=d) for d in (0, 2, 6, 7, 13, 15, 30)]
by_week = Counter(f"{d.isocalendar().year}-W{d.isocalendar().week:02d}" for d in events)
month_starts = sorted({d.replace(day=1).isoformat() for d in events})
span = (max(events) - min(events)).days
[dict(sorted(by_week.items())), month_starts, span, events[-1].isoformat()]
""",
        [
            {"2024-W01": 3, "2024-W02": 2, "2024-W03": 1, "2024-W05": 1},
            ["2024-01-01"],
            30,
            "2024-01-31",
        ],
    ),
    # --- numbers ---
    (
        "decimal_money",
        r"""from decimal import Decimal, ROUND_HALF_UP

prices = [Decimal("19.99"), Decimal("5.01"), Decimal("0.10")]
subtotal = sum(prices, Decimal("0"))
tax = (subtotal * Decimal("0.0825")).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
total = subtotal + tax
split = (total / 3).quantize(Decimal("0.01"))
[str(subtotal), str(tax), str(total), str(split), 0.1 + 0.2 == 0.3, Decimal("0.1") + Decimal("0.2") == Decimal("0.3")]
""",
        ["25.10", "2.07", "27.17", "9.06", False, True],
    ),
    (
        "fraction_math",
        r"""from fractions import Fraction

shares = [Fraction(1, 3), Fraction(1, 4), Fraction(1, 6)]
remaining = 1 - sum(shares)
scaled = [str(s * 120) for s in shares]
approx = Fraction(3.14159).limit_denominator(1000)
[str(remaining), scaled, str(approx), float(Fraction(7, 8)), Fraction("0.125") == Fraction(1, 8)]
""",
        ["1/4", ["40", "30", "20"], "355/113", 0.875, True],
    ),
    (
        "math_helpers",
        r"""import math

vals = [math.floor(-2.5), math.ceil(2.1), round(2.5), round(3.5), round(2.675, 2), math.isclose(0.1 + 0.2, 0.3)]
geo = [math.gcd(48, 180), math.lcm(4, 6), math.comb(5, 2), math.perm(5, 2), math.factorial(6)]
dist = math.dist((0, 0), (3, 4))
[vals, geo, dist, math.isqrt(99), round(math.log10(1000)), math.inf > 1e308, math.fsum([0.1] * 10)]
""",
        [[-3, 3, 2, 4, 2.67, True], [12, 12, 10, 20, 720], 5.0, 9, 3, True, 1.0],
    ),
    (
        "statistics_summary",
        r"""import statistics as st

latencies = [120, 95, 130, 101, 99, 250, 110, 105]
summary = {
    "mean": st.mean(latencies),
    "median": st.median(latencies),
    "stdev": round(st.stdev(latencies), 3),
    "pstdev": round(st.pstdev(latencies), 3),
    "quartiles": st.quantiles(latencies, n=4),
    "mode": st.mode([1, 2, 2, 3, 3, 3]),
    "multimode": st.multimode("aabbc"),
}
summary
""",
        {
            "mean": 126.25,
            "median": 107.5,
            "stdev": 51.325,
            "pstdev": 48.01,
            "quartiles": [99.5, 107.5, 127.5],
            "mode": 3,
            "multimode": ["a", "b"],
        },
    ),
    (
        "random_seeded",
        r"""import random

rng = random.Random(1234)
rolls = [rng.randint(1, 6) for _ in range(5)]
pick = rng.choice(["red", "green", "blue"])
deck = list(range(10))
rng.shuffle(deck)
sample = rng.sample(range(100), 3)
random.seed(7)
g = round(random.random(), 6)
[rolls, pick, deck, sample, g]
""",
        [[4, 1, 1, 1, 5], "red", [3, 2, 6, 4, 7, 0, 8, 5, 9, 1], [78, 59, 19], 0.323833],
    ),
    # --- collections ---
    (
        "counter_most_common",
        r"""from collections import Counter

words = "the cat and the hat and the bat".split()
c = Counter(words)
c.update(["cat", "cat"])
other = Counter(a=1, the=5)
[[list(p) for p in c.most_common(2)], c["dog"], [list(kv) for kv in sorted((c - other).items())], sum(c.values()), dict(Counter("mississippi"))]
""",
        [
            [["the", 3], ["cat", 3]],
            0,
            [["and", 2], ["bat", 1], ["cat", 3], ["hat", 1]],
            10,
            {"m": 1, "i": 4, "s": 4, "p": 2},
        ],
    ),
    (
        "defaultdict_grouping",
        r"""from collections import defaultdict

files = ["a.py", "b.txt", "c.py", "README", "d.md", "e.txt"]
by_ext = defaultdict(list)
for f in files:
    ext = f.rsplit(".", 1)[1] if "." in f else "(none)"
    by_ext[ext].append(f)
nested = defaultdict(lambda: defaultdict(int))
for user, action in [("u1", "view"), ("u1", "click"), ("u2", "view"), ("u1", "view")]:
    nested[user][action] += 1
[dict(by_ext), {u: dict(a) for u, a in nested.items()}, by_ext.default_factory.__name__]
""",
        [
            {
                "py": ["a.py", "c.py"],
                "txt": ["b.txt", "e.txt"],
                "(none)": ["README"],
                "md": ["d.md"],
            },
            {"u1": {"view": 2, "click": 1}, "u2": {"view": 1}},
            "list",
        ],
    ),
    (
        "deque_sliding_window",
        r"""from collections import deque

recent = deque(maxlen=3)
for event in ["a", "b", "c", "d", "e"]:
    recent.append(event)
q = deque([1, 2, 3])
q.appendleft(0)
q.rotate(1)
popped = [q.pop(), q.popleft()]
window_sums = []
w = deque()
for x in [4, 8, 15, 16, 23, 42]:
    w.append(x)
    if len(w) > 3:
        w.popleft()
    window_sums.append(sum(w))
[list(recent), list(q), popped, window_sums]
""",
        [["c", "d", "e"], [0, 1], [2, 3], [4, 12, 27, 39, 54, 81]],
    ),
    (
        "ordereddict_lru_manual",
        r"""from collections import OrderedDict

class LRU:
    def __init__(self, capacity):
        self.capacity = capacity
        self._data = OrderedDict()
    def get(self, key):
        if key not in self._data:
            return None
        self._data.move_to_end(key)
        return self._data[key]
    def put(self, key, value):
        self._data[key] = value
        self._data.move_to_end(key)
        if len(self._data) > self.capacity:
            self._data.popitem(last=False)

cache = LRU(2)
cache.put("a", 1); cache.put("b", 2); cache.get("a"); cache.put("c", 3)
[list(cache._data), cache.get("b"), cache.get("a")]
""",
        [["a", "c"], None, 1],
    ),
    (
        "chainmap_config_layers",
        r"""from collections import ChainMap

defaults = {"timeout": 30, "retries": 3, "verbose": False}
env = {"timeout": 10}
cli = {"verbose": True}
config = ChainMap(cli, env, defaults)
child = config.new_child({"retries": 0})
[config["timeout"], config["verbose"], config["retries"], child["retries"], sorted(config), dict(config) == {"timeout": 10, "retries": 3, "verbose": True}]
""",
        [10, True, 3, 0, ["retries", "timeout", "verbose"], True],
    ),
    # --- functools ---
    (
        "functools_reduce_partial",
        r"""from functools import reduce, partial

nums = [3, 5, 2, 8]
product = reduce(lambda a, b: a * b, nums)
merged = reduce(lambda acc, d: {**acc, **d}, [{"a": 1}, {"b": 2}, {"a": 3}], {})

def power(base, exp):
    return base ** exp

square = partial(power, exp=2)
to_int_base2 = partial(int, base=2)
[product, merged, [square(n) for n in nums], to_int_base2("1011"), square.keywords, square.func.__name__]
""",
        [240, {"a": 3, "b": 2}, [9, 25, 4, 64], 11, {"exp": 2}, "power"],
    ),
    (
        "functools_lru_cache",
        r"""from functools import lru_cache, cache

calls = 0

@lru_cache(maxsize=None)
def fib(n):
    global calls
    calls += 1
    return n if n < 2 else fib(n - 1) + fib(n - 2)

@cache
def slow_square(x):
    return x * x

value = fib(30)
info = fib.cache_info()
[value, calls, info.hits, info.misses, slow_square(12), slow_square.cache_info().currsize]
""",
        [832040, 31, 28, 31, 144, 1],
    ),
    (
        "functools_singledispatch",
        r"""from functools import singledispatch

@singledispatch
def render(value) -> str:
    return f"<{type(value).__name__}>"

@render.register
def _(value: int) -> str:
    return f"int:{value}"

@render.register
def _(value: list) -> str:
    return "[" + ", ".join(render(v) for v in value) + "]"

@render.register(dict)
def _render_dict(value):
    return "{" + ", ".join(f"{k}={render(v)}" for k, v in value.items()) + "}"

[render(5), render([1, "x", 2.5]), render({"a": [True]}), render(None)]
""",
        ["int:5", "[int:1, <str>, <float>]", "{a=[int:True]}", "<NoneType>"],
    ),
    (
        "functools_total_ordering_cmp_to_key",
        r"""from functools import total_ordering, cmp_to_key

@total_ordering
class Card:
    ORDER = "23456789TJQKA"
    def __init__(self, rank):
        self.rank = rank
    def __eq__(self, other):
        return self.rank == other.rank
    def __lt__(self, other):
        return self.ORDER.index(self.rank) < self.ORDER.index(other.rank)

hand = [Card(r) for r in "KT2A9"]
def by_length_then_alpha(a, b):
    return (len(a) - len(b)) or ((a > b) - (a < b))

[[c.rank for c in sorted(hand)], Card("Q") >= Card("J"), Card("3") <= Card("2"), sorted(["pear", "fig", "apple", "kiwi"], key=cmp_to_key(by_length_then_alpha))]
""",
        [["2", "9", "T", "K", "A"], True, False, ["fig", "kiwi", "pear", "apple"]],
    ),
    (
        "functools_cached_property",
        r"""from functools import cached_property

class Report:
    computed = 0
    def __init__(self, rows):
        self.rows = rows
    @cached_property
    def total(self):
        Report.computed += 1
        return sum(self.rows)

r = Report([1, 2, 3])
first, second = r.total, r.total
r.rows.append(10)
stale = r.total
del r.total
[first, second, stale, r.total, Report.computed]
""",
        [6, 6, 6, 16, 2],
    ),
    # --- typing ---
    (
        "typing_optional_union",
        r"""from typing import Optional, Union

def find(items: list[dict], key: str) -> Optional[dict]:
    for item in items:
        if item.get("key") == key:
            return item
    return None

def coerce(value: Union[int, str, None]) -> int:
    if value is None:
        return 0
    if isinstance(value, str):
        return int(value.strip() or 0)
    return value

items = [{"key": "a", "v": 1}, {"key": "b", "v": 2}]
[find(items, "b"), find(items, "z"), [coerce(v) for v in (5, " 7 ", None, "")], coerce.__annotations__["return"].__name__]
""",
        [{"key": "b", "v": 2}, None, [5, 7, 0, 0], "int"],
    ),
    (
        "typing_protocol",
        r"""from typing import Protocol, runtime_checkable

@runtime_checkable
class Closeable(Protocol):
    def close(self) -> None: ...

class Conn:
    def __init__(self):
        self.open = True
    def close(self) -> None:
        self.open = False

class Thing:
    pass

def close_all(objs: list[object]) -> int:
    n = 0
    for o in objs:
        if isinstance(o, Closeable):
            o.close()
            n += 1
    return n

conns = [Conn(), Thing(), Conn()]
[close_all(conns), [getattr(c, "open", None) for c in conns], isinstance(Thing(), Closeable)]
""",
        [2, [False, None, False], False],
    ),
    (
        "typing_generic_typevar",
        r"""from typing import Generic, TypeVar, Iterator

T = TypeVar("T")

class Stack(Generic[T]):
    def __init__(self) -> None:
        self._items: list[T] = []
    def push(self, item: T) -> None:
        self._items.append(item)
    def pop(self) -> T:
        if not self._items:
            raise IndexError("pop from empty stack")
        return self._items.pop()
    def __iter__(self) -> Iterator[T]:
        return reversed(self._items)

s: Stack[int] = Stack()
for i in range(3):
    s.push(i * 10)
top = s.pop()
try:
    Stack[str]().pop()
except IndexError as e:
    err = str(e)
[top, list(s), err, Stack.__name__, Stack[int].__origin__ is Stack]
""",
        [20, [10, 0], "pop from empty stack", "Stack", True],
    ),
    (
        "typing_cast_any_callable",
        r"""from typing import Any, Callable, cast

def apply(fn: Callable[[int], int], values: list[int]) -> list[int]:
    return [fn(v) for v in values]

raw: Any = {"count": "3"}
count = int(cast(dict[str, str], raw)["count"])
same = cast(int, "not really an int")
handlers: dict[str, Callable[..., Any]] = {"double": lambda x: x * 2, "neg": lambda x: -x}
[apply(handlers["double"], [1, 2]), apply(handlers["neg"], [count]), same, type(same).__name__]
""",
        [[2, 4], [-3], "not really an int", "str"],
    ),
    (
        "typing_future_annotations_class",
        r"""from __future__ import annotations
from typing import Optional

class Node:
    def __init__(self, value: int, next: Optional[Node] = None) -> None:
        self.value = value
        self.next = next

    def to_list(self) -> list[int]:
        out, cur = [], self
        while cur is not None:
            out.append(cur.value)
            cur = cur.next
        return out

    @classmethod
    def from_list(cls, values: list[int]) -> Optional[Node]:
        head = None
        for v in reversed(values):
            head = cls(v, head)
        return head

head = Node.from_list([1, 2, 3])
[head.to_list(), Node.__init__.__annotations__["next"], Node.from_list([]) is None]
""",
        [[1, 2, 3], "Optional[Node]", True],
    ),
    # --- asyncio ---
    (
        "async_gather_basic",
        r"""import asyncio

async def fetch(name, delay_steps):
    for _ in range(delay_steps):
        await asyncio.sleep(0)
    return {"name": name, "steps": delay_steps}

results = await asyncio.gather(fetch("users", 3), fetch("orders", 1), fetch("items", 2))
[r["name"] for r in results]
""",
        ["users", "orders", "items"],
    ),
    (
        "async_gather_return_exceptions",
        r"""import asyncio

async def call(tool, fail=False):
    await asyncio.sleep(0)
    if fail:
        raise RuntimeError(f"{tool} unavailable")
    return f"{tool}: ok"

outcomes = await asyncio.gather(call("search"), call("weather", fail=True), call("calc"), return_exceptions=True)
[o if isinstance(o, str) else f"{type(o).__name__}({o})" for o in outcomes]
""",
        ["search: ok", "RuntimeError(weather unavailable)", "calc: ok"],
    ),
    (
        "async_semaphore_order",
        r"""import asyncio

order = []
sem = asyncio.Semaphore(2)

async def worker(i):
    async with sem:
        order.append(f"start{i}")
        await asyncio.sleep(0)
        order.append(f"end{i}")
        return i * i

squares = await asyncio.gather(*(worker(i) for i in range(4)))
[squares, order]
""",
        [[0, 1, 4, 9], ["start0", "start1", "end0", "end1", "start2", "start3", "end2", "end3"]],
    ),
    (
        "async_queue_producer_consumer",
        r"""import asyncio

async def producer(q, n):
    for i in range(n):
        await q.put(i)
    await q.put(None)

async def consumer(q, out):
    while (item := await q.get()) is not None:
        out.append(item * 10)
        await asyncio.sleep(0)

queue = asyncio.Queue()
collected = []
await asyncio.gather(producer(queue, 5), consumer(queue, collected))
collected
""",
        [0, 10, 20, 30, 40],
    ),
    (
        "async_create_task_wait_for",
        r"""import asyncio

async def slow():
    await asyncio.sleep(10)
    return "late"

async def quick(x):
    await asyncio.sleep(0)
    return x + 1

task = asyncio.create_task(quick(41))
try:
    await asyncio.wait_for(slow(), timeout=0)
    timed_out = False
except asyncio.TimeoutError:
    timed_out = True
value = await task
[value, timed_out, task.done()]
""",
        [42, True, True],
    ),
    (
        "async_exception_in_gather",
        r"""import asyncio

class FetchError(Exception):
    def __init__(self, url, code):
        super().__init__(f"{url} -> {code}")
        self.code = code

async def get(url, code=200):
    await asyncio.sleep(0)
    if code >= 400:
        raise FetchError(url, code)
    return url

try:
    await asyncio.gather(get("/a"), get("/b", 503))
    failure = None
except FetchError as e:
    failure = {"msg": str(e), "code": e.code, "type": type(e).__name__}
ok = await asyncio.gather(get("/x"), get("/y"))
[failure, ok]
""",
        [{"msg": "/b -> 503", "code": 503, "type": "FetchError"}, ["/x", "/y"]],
    ),
    (
        "async_generator_comprehension",
        r"""import asyncio

async def ticker(n):
    for i in range(n):
        await asyncio.sleep(0)
        yield i

async def collect():
    evens = [i async for i in ticker(7) if i % 2 == 0]
    total = 0
    async for i in ticker(4):
        total += i
    return evens, total

evens, total = await collect()
[evens, total]
""",
        [[0, 2, 4, 6], 6],
    ),
    # --- context_managers ---
    (
        "ctx_class_enter_exit",
        r"""events = []

class Timer:
    def __init__(self, name):
        self.name = name
    def __enter__(self):
        events.append(f"enter {self.name}")
        return self
    def __exit__(self, exc_type, exc, tb):
        events.append(f"exit {self.name} exc={exc_type.__name__ if exc_type else None}")
        return False

with Timer("outer") as t:
    with Timer("inner"):
        events.append("work")
try:
    with Timer("failing"):
        raise KeyError("k")
except KeyError:
    events.append("handled")
[events, t.name]
""",
        [
            [
                "enter outer",
                "enter inner",
                "work",
                "exit inner exc=None",
                "exit outer exc=None",
                "enter failing",
                "exit failing exc=KeyError",
                "handled",
            ],
            "outer",
        ],
    ),
    (
        "ctx_suppressing_exit",
        r"""class Suppress:
    def __init__(self, *exc_types):
        self.exc_types = exc_types
        self.caught = None
    def __enter__(self):
        return self
    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None and issubclass(exc_type, self.exc_types):
            self.caught = repr(exc)
            return True
        return False

with Suppress(ZeroDivisionError, KeyError) as s:
    value = 1
    value = value / 0
after = "continued"
[value, s.caught, after]
""",
        [1, "ZeroDivisionError('division by zero')", "continued"],
    ),
    (
        "ctx_transaction_rollback",
        r"""class Transaction:
    def __init__(self, store):
        self.store = store
    def __enter__(self):
        self._snapshot = dict(self.store)
        return self.store
    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.store.clear()
            self.store.update(self._snapshot)
        return False

db = {"balance": 100}
with Transaction(db) as tx:
    tx["balance"] -= 30
try:
    with Transaction(db) as tx:
        tx["balance"] -= 500
        if tx["balance"] < 0:
            raise ValueError("insufficient funds")
except ValueError as e:
    error = str(e)
[db, error]
""",
        [{"balance": 70}, "insufficient funds"],
    ),
    (
        "ctx_multiple_managers_one_with",
        r"""log = []

class Res:
    def __init__(self, name):
        self.name = name
    def __enter__(self):
        log.append(f"open {self.name}")
        return self.name.upper()
    def __exit__(self, *exc_info):
        log.append(f"close {self.name}")

with Res("a") as a, Res("b") as b:
    log.append(f"using {a}+{b}")
log
""",
        ["open a", "open b", "using A+B", "close b", "close a"],
    ),
    # --- hashing ---
    (
        "hash_digests_base64",
        r"""import hashlib
import base64

data = "hello world".encode("utf-8")
sha = hashlib.sha256(data).hexdigest()
md5 = hashlib.md5(data).hexdigest()
b64 = base64.b64encode(data).decode("ascii")
url = base64.urlsafe_b64encode(b"\xfb\xff\xfe").decode()
back = base64.b64decode(b64).decode()
[sha[:16], md5, b64, url, back, hashlib.sha1(b"").hexdigest()[:8]]
""",
        [
            "b94d27b9934d3e08",
            "5eb63bbbe01eeed093cb22bb8f5acdc3",
            "aGVsbG8gd29ybGQ=",
            "-__-",
            "hello world",
            "da39a3ee",
        ],
    ),
    (
        "hash_incremental_cache_key",
        r"""import hashlib
import json

def cache_key(params):
    canonical = json.dumps(params, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]

h = hashlib.sha256()
for chunk in [b"abc", b"def"]:
    h.update(chunk)
same = h.hexdigest() == hashlib.sha256(b"abcdef").hexdigest()
[cache_key({"q": "x", "n": 1}) == cache_key({"n": 1, "q": "x"}), cache_key({"q": "x"}), same, hashlib.blake2b(b"k", digest_size=8).hexdigest()]
""",
        [True, "a69fbbcf7209", True, "ac52cb5ff985d463"],
    ),
    (
        "uuid_deterministic_b32",
        r"""import uuid
import base64

ns = uuid.UUID("12345678-1234-5678-1234-567812345678")
u5 = uuid.uuid5(uuid.NAMESPACE_DNS, "example.com")
u3 = uuid.uuid3(uuid.NAMESPACE_URL, "https://example.com")
[str(u5), u5.version, str(u3)[:8], ns.hex, str(uuid.UUID(int=1)), base64.b32encode(b"hi").decode(), base64.b16encode(b"\x01\xff").decode()]
""",
        [
            "cfbff0d1-9375-5685-968c-48ce8b15ae17",
            5,
            "68794df6",
            "12345678123456781234567812345678",
            "00000000-0000-0000-0000-000000000001",
            "NBUQ====",
            "01FF",
        ],
    ),
    # --- language ---
    (
        "walrus_filters",
        r"""import re

lines = ["id=4", "noise", "id=17", "id=x", "id=99"]
ids = [int(m.group(1)) for line in lines if (m := re.fullmatch(r"id=(\d+)", line))]
data = [5, 12, 7, 30]
big = [y for x in data if (y := x * 3) > 20]
chunks = iter(["ab", "cd", ""])
collected = []
while chunk := next(chunks):
    collected.append(chunk)
[ids, big, collected, (n := len(ids)) * 2, n]
""",
        [[4, 17, 99], [36, 21, 90], ["ab", "cd"], 6, 3],
    ),
    (
        "match_statement_shapes",
        r"""def describe(event):
    match event:
        case {"type": "click", "pos": [x, y]}:
            return f"click at {x},{y}"
        case {"type": "key", "key": str(k)} if len(k) == 1:
            return f"key {k}"
        case {"type": "key"}:
            return "special key"
        case [first, *rest]:
            return f"batch of {1 + len(rest)} starting {first}"
        case int() | float() as n if n < 0:
            return "negative"
        case None:
            return "nothing"
        case _:
            return "unknown"

[describe(e) for e in [{"type": "click", "pos": [3, 4]}, {"type": "key", "key": "q"}, {"type": "key", "key": "F1"}, ["a", "b", "c"], -2.5, None, 7]]
""",
        [
            "click at 3,4",
            "key q",
            "special key",
            "batch of 3 starting a",
            "negative",
            "nothing",
            "unknown",
        ],
    ),
    (
        "match_class_patterns",
        r"""from dataclasses import dataclass

@dataclass
class Ok:
    value: object

@dataclass
class Err:
    code: int
    message: str

def handle(result):
    match result:
        case Ok(value=dict() as d) if "id" in d:
            return f"record {d['id']}"
        case Ok(value):
            return f"ok {value!r}"
        case Err(code=404):
            return "not found"
        case Err(code, message) if code >= 500:
            return f"server error {code}: {message}"
        case Err():
            return "client error"

[handle(r) for r in [Ok({"id": 3}), Ok([1]), Err(404, "x"), Err(503, "down"), Err(400, "bad")]]
""",
        ["record 3", "ok [1]", "not found", "server error 503: down", "client error"],
    ),
    (
        "match_value_patterns_of_any_name",
        r"""import enum

class Kind:
    mapping = "mapping"
    sequence = "sequence"
    _EOF = "eof"

class Color(enum.Enum):
    RED = 1
    GREEN = 2

def describe(k):
    match k:
        case Kind.sequence:
            return "seq"
        case Kind.mapping | Kind._EOF:
            return "map/eof"
        case {Kind.mapping: v}:
            return f"dict {v}"
        case [Kind._EOF, *rest]:
            return f"list {rest}"
        case Color.RED:
            return "red"
    return "?"

[describe(k) for k in ["mapping", "sequence", "eof", {"mapping": 3}, ["eof", 1], Color.RED, 0]]
""",
        ["map/eof", "seq", "map/eof", "dict 3", "list [1]", "red", "?"],
    ),
    (
        "match_value_patterns_in_a_class_body_read_when_tried",
        r"""class Cfg:
    def __init__(self):
        self._last = "a"

    def advance(self):
        self._last = "b"
        return "b"

cfg = Cfg()

class Table:
    kind = 1
    match kind:
        case 1:
            first = "one"
        case cfg._missing:
            first = "never read"
    match cfg.advance():
        case cfg._last:
            second = "read after the subject"
        case _:
            second = "read before it"

[Table.first, Table.second]
""",
        ["one", "read after the subject"],
    ),
    (
        "star_unpacking",
        r"""first, *middle, last = [1, 2, 3, 4, 5]
head, *tail = "abc"
(a, b), *rest = [(1, 2), (3, 4), (5, 6)]
merged = [*middle, *"xy", *range(2)]
combined = {**{"a": 1, "b": 2}, **{"b": 3}, "c": 4}

def stats(*values, scale=1, **extra):
    return {"n": len(values), "sum": sum(values) * scale, "extra": sorted(extra)}

args = [1, 2, 3]
opts = {"scale": 10, "debug": True}
[first, middle, last, head, tail, a, b, len(rest), merged, combined, stats(*args, **opts)]
""",
        [
            1,
            [2, 3, 4],
            5,
            "a",
            ["b", "c"],
            1,
            2,
            2,
            [2, 3, 4, "x", "y", 0, 1],
            {"a": 1, "b": 3, "c": 4},
            {"n": 3, "sum": 60, "extra": ["debug"]},
        ],
    ),
    (
        "closure_nonlocal",
        r"""def make_counter(start=0):
    count = start
    def increment(step=1):
        nonlocal count
        count += step
        return count
    def reset():
        nonlocal count
        count = start
    return increment, reset

inc, reset = make_counter(10)
values = [inc(), inc(5)]
reset()
values.append(inc())
adders = [lambda x, n=n: x + n for n in range(3)]
late = [lambda x: x + n for n in range(3)]
[values, [f(10) for f in adders], [f(10) for f in late], inc.__closure__ is not None]
""",
        [[11, 16, 11], [10, 11, 12], [12, 12, 12], True],
    ),
    (
        "global_counter",
        r"""CALLS = 0
CACHE = {}

def lookup(key):
    global CALLS
    CALLS += 1
    if key not in CACHE:
        CACHE[key] = key.upper()
    return CACHE[key]

for k in ["a", "b", "a", "c", "a"]:
    lookup(k)
[CALLS, sorted(CACHE), len(CACHE)]
""",
        [5, ["a", "b", "c"], 3],
    ),
    (
        "lambda_sort_map_filter",
        r"""products = [("pen", 1.5, 10), ("book", 12.0, 2), ("bag", 25.0, 0), ("ink", 4.25, 7)]
in_stock = list(filter(lambda p: p[2] > 0, products))
names = list(map(lambda p: p[0].title(), in_stock))
value = sum(map(lambda p: p[1] * p[2], products))
cheapest = min(in_stock, key=lambda p: p[1])[0]
by_value = sorted(products, key=lambda p: p[1] * p[2], reverse=True)
[names, value, cheapest, [p[0] for p in by_value]]
""",
        [["Pen", "Book", "Ink"], 68.75, "pen", ["ink", "book", "pen", "bag"]],
    ),
]
