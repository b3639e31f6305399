"""numpy's seeded generators, made without numpy's seed-sequence cost.

Every env reset makes four seeded generators (Gymnasium's ``np_random``, the deal's, the seats' seeds', the random
player's): ``np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=key))``. numpy builds the seed sequence
and hashes it into the generator's first state in Python-level code, 13 to 27 µs a generator, a sixth to a quarter
of a reset against the random player (docs/design.md, "One seat module, one seed").

:func:`seeded_generator` returns the same generator, draw for draw, at about a fifth of numpy's cost (6.8 against
33.1 µs in one timing): a compiled kernel computes the seed sequence's words (numpy's ``SeedSequence.generate_state``,
the hash of M. E. O'Neill's ``seed_seq_fe``), and numpy seeds its PCG64 from them (:class:`SeedWords`).
``tests/test_seeding.py`` compares both against numpy for 507 entropies and 5 spawn keys. Entropy at or above 2**64
and spawn keys longer than one integer take numpy's own path.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit
from numpy.random.bit_generator import ISpawnableSeedSequence

_POOL = 4  # numpy's DEFAULT_POOL_SIZE, in 32-bit words
_MASK = np.uint64(0xFFFFFFFF)
_SHIFT = np.uint64(16)
_INIT_A, _MULT_A = np.uint64(0x43B0D7E5), np.uint64(0x931E8875)
_INIT_B, _MULT_B = np.uint64(0x8B51F9DD), np.uint64(0x58F38DED)
_MIX_L, _MIX_R = np.uint64(0xCA01F9DD), np.uint64(0x4973F715)
_LIMIT = 2**64  # entropy below this fits the kernel's two words


@njit(cache=True)
def _hashmix(value: np.uint64, hash_const: np.ndarray) -> np.uint64:
    # 32-bit arithmetic carried in uint64 and masked: numba has no wrapping uint32 multiply.
    value = value ^ hash_const[0]
    hash_const[0] = (hash_const[0] * _MULT_A) & _MASK
    value = (value * hash_const[0]) & _MASK
    return value ^ (value >> _SHIFT)


@njit(cache=True)
def _mix(x: np.uint64, y: np.uint64) -> np.uint64:
    result = (_MIX_L * x - _MIX_R * y) & _MASK
    return result ^ (result >> _SHIFT)


@njit("uint64[:](uint64, int64, int64)", cache=True)  # typed: a Python int entropy of either sign type
def _state_words(entropy: np.uint64, key: np.int64, n_words: np.int64) -> np.ndarray:
    """``SeedSequence(entropy, spawn_key=(key,) if key >= 0 else ()).generate_state(n_words, np.uint64)``."""
    # The assembled entropy: the run entropy's 32-bit words (least significant first, one word for 0), padded with
    # zeros to the pool size when there is a spawn key, then the key's word.
    words = np.zeros(_POOL + 1, dtype=np.uint64)
    length = 1 if entropy >> np.uint64(32) == 0 else 2
    words[0] = entropy & _MASK
    words[1] = entropy >> np.uint64(32)
    if key >= 0:
        words[_POOL] = np.uint64(key)
        length = _POOL + 1
    # The pool: hash the entropy in, mix every word into every other, then fold in the words beyond the pool.
    hash_const = np.full(1, _INIT_A, dtype=np.uint64)
    pool = np.zeros(_POOL, dtype=np.uint64)
    for i in range(_POOL):
        pool[i] = _hashmix(words[i] if i < length else np.uint64(0), hash_const)
    for src in range(_POOL):
        for dst in range(_POOL):
            if src != dst:
                pool[dst] = _mix(pool[dst], _hashmix(pool[src], hash_const))
    for src in range(_POOL, length):
        for dst in range(_POOL):
            pool[dst] = _mix(pool[dst], _hashmix(words[src], hash_const))
    # The output: 32-bit words drawn from the pool in turn, paired little-endian into 64-bit words.
    out = np.zeros(n_words, dtype=np.uint64)
    const = _INIT_B
    for i in range(2 * n_words):
        value = pool[i % _POOL] ^ const
        const = (const * _MULT_B) & _MASK
        value = (value * const) & _MASK
        value ^= value >> _SHIFT
        out[i // 2] |= value << np.uint64(32 * (i % 2))
    return out


class SeedWords(ISpawnableSeedSequence):
    """``np.random.SeedSequence(entropy, spawn_key=spawn_key)`` for seeding a numpy bit generator: its
    ``generate_state`` words come from the compiled kernel; anything else (``spawn``, ``entropy``, other word
    counts) from a real seed sequence, made on first use. Picklable, as a generator's ``seed_seq`` must be."""

    def __init__(self, entropy: int, spawn_key: tuple[int, ...] = ()) -> None:
        self._seed = (entropy, spawn_key)
        self._sequence: np.random.SeedSequence | None = None

    def generate_state(self, n_words: int, dtype: Any = np.uint32) -> np.ndarray:
        """The seed sequence's first ``n_words`` words of ``dtype`` (numpy's ``SeedSequence.generate_state``)."""
        if dtype is np.uint64:
            entropy, spawn_key = self._seed
            return _state_words(entropy, spawn_key[0] if spawn_key else -1, n_words)
        return self._real().generate_state(n_words, dtype)

    def spawn(self, n_children: int) -> list[np.random.SeedSequence]:
        """The real seed sequence's children (it counts them, so later calls spawn further ones)."""
        return self._real().spawn(n_children)

    def __getattr__(self, name: str) -> Any:
        # Only names the instance lacks (``entropy``, ``spawn_key``, ``pool``...): the real sequence's. Special
        # names, and an instance being unpickled (no _seed yet), never make one.
        if name.startswith("__") or name in ("_seed", "_sequence"):
            raise AttributeError(name)
        return getattr(self._real(), name)

    def _real(self) -> np.random.SeedSequence:
        if self._sequence is None:
            entropy, spawn_key = self._seed
            self._sequence = np.random.SeedSequence(entropy, spawn_key=spawn_key)
        return self._sequence


def seed_words(entropy: int, spawn_key: tuple[int, ...] = ()) -> np.random.SeedSequence | SeedWords:
    """What seeds a bit generator as ``np.random.SeedSequence(entropy, spawn_key=spawn_key)`` does: the fast
    :class:`SeedWords` for an entropy in [0, 2**64) and at most one spawn key below 2**32, else numpy's own."""
    if type(entropy) is int and 0 <= entropy < _LIMIT and len(spawn_key) <= 1 and all(
            type(k) is int and 0 <= k < 2**32 for k in spawn_key):
        return SeedWords(entropy, spawn_key)
    return np.random.SeedSequence(entropy, spawn_key=spawn_key)


def seeded_generator(entropy: int, spawn_key: tuple[int, ...] = ()) -> np.random.Generator:
    """``np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=spawn_key))``, draw for draw, faster."""
    return np.random.Generator(np.random.PCG64(seed_words(entropy, spawn_key)))
