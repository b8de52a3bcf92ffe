"""Stand-in randomness sources for tests."""

from __future__ import annotations

from treedp import InsecureSeededSource


class CountingSource:
    """A seeded stand-in source that counts the random words asked of it (all zero bytes):
    tests check that a refused charge draws nothing (``calls == 0``)."""

    seeded = True

    def __init__(self) -> None:
        self.calls = 0

    def random_bytes(self, n: int) -> bytes:
        self.calls += 1
        return bytes(n)

    def describe(self) -> dict[str, object]:
        return {"source": "counting", "seeded": True}


class DrawCountingSource(InsecureSeededSource):
    """A seeded source that counts the random bytes drawn (``drawn``), to see when noise
    starts: a refusal before the charge draws nothing (``drawn == 0``)."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.drawn = 0

    def random_bytes(self, n: int) -> bytes:
        self.drawn += n
        return super().random_bytes(n)
