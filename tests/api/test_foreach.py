"""torch's `_foreach_*` functions on lists of GT tensors (gt/foreach.py) against torch's:
the in-place forms update each tensor (and an alias of it), as moving-average code wants,
and return them; the others return a new list."""

import pytest
import torch

import gt


def moving_average(lib):
    lib.manual_seed(0)
    average = [lib.randn(3), lib.randn(2, 2)]
    model = [lib.randn(3), lib.randn(2, 2)]
    alias = average[0]
    returned = lib._foreach_mul_(average, 0.9)
    assert returned[0] is average[0]
    lib._foreach_add_(average, model, alpha=0.1)
    lib._foreach_lerp_(average, model, 0.25)
    lib._foreach_addcmul_(average, model, model, value=0.5)
    lib._foreach_clamp_min_(average, -0.5)
    results = [*average, alias, *lib._foreach_norm(average), *lib._foreach_norm(average, 1),
               *lib._foreach_sqrt([lib.tensor([4.0, 9.0])]),
               *lib._foreach_pow(2.0, [lib.tensor([1.0, 3.0])]),
               *lib._foreach_add(average, [1.0, 2.0]), *lib._foreach_maximum(average, model)]
    lib._foreach_copy_(average, model)
    lib._foreach_zero_(model)
    return results + average + model


def test_foreach_updates_and_results_match_torchs():
    for got, want in zip(moving_average(gt), moving_average(torch), strict=True):
        torch.testing.assert_close(got.data, want)


def test_lists_of_different_lengths_are_refused():
    with pytest.raises(RuntimeError, match='same length'):
        gt._foreach_add_([gt.ones(2), gt.ones(2)], [gt.ones(2)])
