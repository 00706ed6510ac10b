"""`RunSlots`: how many runs work at once, and the runs that wait for a person meanwhile.

Each run may hold its memory limit, so runs at once are capped (`executor.runs_that_fit`)
and the rest wait their turn. A run whose code asked a person for approval (contract §8)
does nothing until the answer comes, for up to `MCP_CODE_APPROVAL_TIMEOUT_S`: it gives its
place back meanwhile (`Place.park`) and takes one again when the answer comes
(`Place.unpark`). Questions nobody answered held every place for 120 s, so one client's
unanswered `input_required` questions stopped every other client's runs (outside attack
123). As many runs may wait for a person as may run (their workers keep their memory); a
question past that is declined at once, so runs that ask nobody are never held up.
"""

from __future__ import annotations

import asyncio

__all__ = ["Place", "RunSlots"]


class RunSlots:
    """`size` places for runs at once, and as many for runs parked on a person."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.free = asyncio.Semaphore(size)
        self.parked = 0  # runs waiting for a person's answer, their place given back

    def locked(self) -> bool:
        """Whether a run that comes now waits for a place."""
        return self.free.locked()

    async def take(self) -> Place:
        """Wait for a place; the run gives it back with `Place.leave`."""
        await self.free.acquire()
        return Place(self)


class Place:
    """One run's place among `RunSlots`; see the module docstring."""

    def __init__(self, slots: RunSlots) -> None:
        self._slots = slots
        self._held = True
        self._parked = False

    def park(self) -> str | None:
        """Give the place back while a person is asked; why the question is declined
        instead, when as many runs as may run already wait for a person."""
        slots = self._slots
        if self._parked or not self._held:
            return None
        if slots.parked >= slots.size:
            return (
                f"it was declined: {slots.parked} runs are already waiting for a person's "
                "answer, as many as may wait at once; try again once those are answered"
            )
        slots.parked += 1
        self._parked, self._held = True, False
        slots.free.release()
        return None

    async def unpark(self) -> None:
        """The answer came: wait for a place again (the wait is not the run's time)."""
        if not self._parked:
            return
        self._parked = False
        self._slots.parked -= 1
        await self._slots.free.acquire()
        self._held = True

    def leave(self) -> None:
        """The run is over: its place (or its parking) goes back."""
        if self._parked:
            self._parked = False
            self._slots.parked -= 1
        if self._held:
            self._held = False
            self._slots.free.release()
