"""uno_env.seeding's generators are numpy's, draw for draw: the seed sequence's words, the streams, pickles, spawns."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from uno_env.opponents import RandomPolicy
from uno_env.seeding import SeedWords, seed_words, seeded_generator

ENTROPIES = [0, 1, 2**32 - 1, 2**32, 2**40, 2**62 - 1, 2**64 - 1,
             *np.random.default_rng(20261125).integers(0, 2**63, 500).tolist()]
KEYS = [(), (0,), (1,), (2,), (2**32 - 1,)]


@pytest.mark.parametrize("key", KEYS)
def test_the_words_are_numpys_seed_sequence_words(key: tuple[int, ...]):
    for entropy in ENTROPIES:
        for n_words in (1, 2, 4, 5):
            expected = np.random.SeedSequence(entropy, spawn_key=key).generate_state(n_words, np.uint64)
            got = SeedWords(entropy, key).generate_state(n_words, np.uint64)
            assert got.dtype == np.uint64 and got.tolist() == expected.tolist(), (entropy, key, n_words)
        assert (SeedWords(entropy, key).generate_state(3).tolist()
                == np.random.SeedSequence(entropy, spawn_key=key).generate_state(3).tolist())


def test_the_generators_draw_numpys_numbers():
    for entropy in ENTROPIES[::5]:
        for key in KEYS:
            ours, numpys = seeded_generator(entropy, key), np.random.default_rng(
                np.random.SeedSequence(entropy, spawn_key=key))
            assert ours.integers(0, 2**62, size=8).tolist() == numpys.integers(0, 2**62, size=8).tolist()
            assert ours.random() == numpys.random()


def test_a_generator_pickles_spawns_and_tells_its_seed_sequence():
    generator = seeded_generator(12345, (1,))
    generator.random()
    copy = pickle.loads(pickle.dumps(generator))
    assert copy.random() == generator.random(), "a pickle keeps the stream's position"
    real = np.random.SeedSequence(12345, spawn_key=(1,))
    sequence = generator.bit_generator.seed_seq
    assert (sequence.entropy, sequence.spawn_key) == (12345, (1,))
    assert [c.generate_state(2).tolist() for c in generator.bit_generator.seed_seq.spawn(2)] == [
        c.generate_state(2).tolist() for c in real.spawn(2)]
    assert generator.spawn(1)[0].random() == np.random.default_rng(real.spawn(1)[0]).random(), "spawns continue"


@pytest.mark.parametrize("entropy, key", [(2**64, ()), (2**70, (3,)), (5, (1, 2)), (5, (2**32,)), ([1, 2], ())])
def test_what_the_kernel_does_not_cover_takes_numpys_path(entropy: object, key: tuple[int, ...]):
    words = seed_words(entropy, key)
    assert isinstance(words, np.random.SeedSequence)
    assert seeded_generator(entropy, key).random() == np.random.default_rng(
        np.random.SeedSequence(entropy, spawn_key=key)).random()


def test_a_bad_entropy_gets_numpys_error():
    with pytest.raises(ValueError):
        seeded_generator(-1)


def test_the_random_player_is_reset_as_default_rng_would_be():
    """RandomPolicy.reset takes an int seed through uno_env.seeding and anything else default_rng takes as before."""
    player = RandomPolicy()
    for seed in (5, np.random.SeedSequence(5), np.int64(5)):
        player.reset(seed)
        assert player.rng.random() == np.random.default_rng(seed).random(), seed
