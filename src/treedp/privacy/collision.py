"""The δ of telling persons apart by a keyed 128-bit hash, shared by every place that does.

When persons are told apart by the first 16 bytes of a keyed BLAKE2b hash of their id (the
key drawn afresh, independently of the data), an added person A whose digest collides with a
person B's shares B's allowance: neighbouring inputs can then differ by up to twice the bound
of kept records (A's in, B's out), which the stated loss does not cover. Modelling keyed
BLAKE2b truncated to 128 bits as a random function, A collides with one given other person
with probability ``2**-128``, so with ``n`` distinct persons the guarantee is the stated loss
**plus** ``δ <= (n - 1)·2**-128`` (the stated loss holds conditioned on no such collision).
Used by :mod:`treedp.continual.persons` (a stream's per-person table) and by the file
engine's grouping (:mod:`treedp.engines.files.grouped`, text ids).
"""

from __future__ import annotations

__all__ = ["COLLISION", "COLLISION_DELTA", "DIGEST"]

#: Bytes kept of each keyed hash.
DIGEST = 16

#: δ per other person: the chance the added person's digest collides with theirs.
COLLISION_DELTA = 2.0 ** -(8 * DIGEST)

#: The collision term of the guarantee, in words (see the module docstring).
COLLISION = (
    "plus delta <= (n - 1) * 2**-128 for n distinct persons: a keyed-hash collision of the "
    "added person with another can move up to 2k kept records; the stated loss holds "
    "conditioned on no such collision"
)
