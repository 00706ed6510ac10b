"""`RunSlots`: how many runs work at once, and the runs that wait for a person meanwhile.

Each run may hold its memory limit, so runs at once are capped (`executor.runs_that_fit`)
and the rest wait their turn. A run whose code asked a person for approval (contract §8)
does nothing until the answer comes, for up to `MCP_CODE_APPROVAL_TIMEOUT_S`: it gives its
place back meanwhile (`Place.park`) and takes a free one again when the answer comes, or
goes on without one (`Place.unpark`: never a wait with its clock stopped, attack 126).
Questions nobody answered held every place for 120 s, so one client's unanswered
`input_required` questions stopped every other client's runs (outside attack 123). As many
runs may be out of their place as may run (their workers keep their memory: at most twice
the places in all); a question past that is declined at once, so runs that ask nobody are
never held up. One client (`owner`) may have at most three quarters of those out at once:
one that asked and never answered (and hung up) had every other client's questions declined
unasked for the whole approval timeout (outside attack 146).
"""

from __future__ import annotations

import asyncio

__all__ = ["Place", "RunSlots"]


class RunSlots:
    """`size` places for runs at once, and as many for runs out of their place (`parked`)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.free = asyncio.Semaphore(size)
        # runs without a place: waiting for a person, or going on after the answer when
        # every place was taken (their worker was there all along)
        self.parked = 0
        self.parked_by: dict[str, int] = {}  # of `parked`, by the client whose runs they are

    def locked(self) -> bool:
        """Whether a run that comes now waits for a place."""
        return self.free.locked()

    async def take(self, owner: str = "") -> Place:
        """Wait for a place for a run of `owner` (its client; "": unknown); the run gives
        it back with `Place.leave`."""
        await self.free.acquire()
        return Place(self, owner)

    def share(self) -> int:
        """How many runs out of their place one client may have."""
        return max(1, self.size - self.size // 4)


class Place:
    """One run's place among `RunSlots`; see the module docstring."""

    def __init__(self, slots: RunSlots, owner: str = "") -> None:
        self._slots = slots
        self._owner = owner
        self._held = True  # one of the semaphore's places
        self._out = False  # counted in `parked`

    def park(self) -> str | None:
        """Give the place back while a person is asked; why the question is declined
        instead, when as many runs as may run are already out of their place."""
        slots = self._slots
        if self._out:
            return None  # out already (a second question): counted once
        if slots.parked >= slots.size:
            return (
                f"it was declined: {slots.parked} runs are already waiting for a person's "
                "answer, as many as may wait at once; try again once those are answered"
            )
        mine = slots.parked_by.get(self._owner, 0)
        if self._owner and mine >= slots.share():
            return (
                f"it was declined: {mine} runs of this client are already waiting for a "
                "person's answer, as many as one client may have; answer those first"
            )
        slots.parked += 1
        slots.parked_by[self._owner] = mine + 1
        self._out = True
        if self._held:
            self._held = False
            slots.free.release()
        return None

    async def unpark(self) -> None:
        """The answer came: a free place again if there is one, else the run goes on
        without one, still counted as out, until it ends. It never waits: a session keeps
        its place between steps, so a parked one could wait for another to end."""
        slots = self._slots
        if not self._out or slots.free.locked():
            return
        await slots.free.acquire()  # free: taken at once
        self._held, self._out = True, False
        self._count_back()

    def leave(self) -> None:
        """The run is over: its place (or its count among those out) goes back."""
        if self._out:
            self._out = False
            self._count_back()
        if self._held:
            self._held = False
            self._slots.free.release()

    def _count_back(self) -> None:
        slots = self._slots
        slots.parked -= 1
        left = slots.parked_by.pop(self._owner, 1) - 1
        if left > 0:
            slots.parked_by[self._owner] = left
