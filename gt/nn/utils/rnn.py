"""torch.nn.utils.rnn: variable-length sequences padded into one batch tensor and back,
and packed (`PackedSequence`: the sequences' steps interleaved, longest first, with the
batch size of each step) for GT's RNN, LSTM and GRU. As in torch, `batch_sizes` is a CPU
int64 torch tensor (the client's: it decides how the steps run), while the data and the
sort permutations are GT tensors; packing and unpacking are each one gather, from index
lists made on the client, so gradients flow through them."""

from typing import Any, Iterable, NamedTuple

import torch

from gt.creation import full, tensor
from gt.functional import cat, stack
from gt.tensor import Tensor

__all__ = ['PackedSequence', 'pad_sequence', 'unpad_sequence', 'pack_padded_sequence',
           'pad_packed_sequence', 'pack_sequence', 'unpack_sequence']


def pad_sequence(sequences: Tensor | Iterable[Tensor], batch_first: bool = False,
                 padding_value: float = 0.0, padding_side: str = 'right') -> Tensor:
    """Sequences of shapes (L_i, *) as one tensor of shape (max L_i, B, *), or (B, max L_i,
    *) with `batch_first`; each is padded with `padding_value` on `padding_side`. Recorded
    from concatenations, so gradients reach the sequences."""
    if not isinstance(sequences, Iterable):
        raise RuntimeError('pad_sequence: Expected iterable for input sequences, but got arg '
                           f'of type: {type(sequences)}')
    sequences = tuple(sequences)
    if padding_side not in ('left', 'right'):
        raise RuntimeError('Expected padding_side to be one of left or right, but got '
                           f'{padding_side}.')
    if not sequences:
        raise RuntimeError('received an empty list of sequences')
    first = sequences[0]
    trailing, dtype = tuple(first.shape[1:]), first.dtype
    longest = max(sequence.shape[0] for sequence in sequences)
    padded = []
    for sequence in sequences:
        if tuple(sequence.shape[1:]) != trailing:
            raise RuntimeError(f'pad_sequence: every sequence must have the trailing shape '
                               f'{list(trailing)} of the first, got {list(sequence.shape)}')
        sequence = sequence.to(dtype)
        missing = longest - sequence.shape[0]
        if missing:
            filler = full((missing, *trailing), padding_value, dtype=dtype)
            sequence = cat([sequence, filler] if padding_side == 'right'
                           else [filler, sequence])
        padded.append(sequence)
    return stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor | Iterable[int],
                   batch_first: bool = False) -> list[Tensor]:
    """The sequences of a right-padded batch, each cut to its length (`pad_sequence`'s
    inverse)."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    if isinstance(lengths, Tensor):
        lengths = lengths.tolist()
    return [sequence[:int(length)] for sequence, length in zip(padded_sequences, lengths)]


class PackedSequence(NamedTuple):
    """torch's fields: `data` (the steps' rows, sum of the lengths by *), `batch_sizes`
    (how many sequences each step has, a CPU torch tensor), and the permutation sorting
    the batch by length (`sorted_indices`) and its inverse, None when it was sorted."""

    data: Tensor
    batch_sizes: torch.Tensor
    sorted_indices: Tensor | None = None
    unsorted_indices: Tensor | None = None

    def to(self, *args: Any, **kwargs: Any) -> 'PackedSequence':
        """The data converted as `Tensor.to` converts it; the rest as it is."""
        return self._replace(data=self.data.to(*args, **kwargs))

    # torch's conversions of the data; GT places tensors itself, so the moves keep it.
    def cuda(self, *args: Any, **kwargs: Any) -> 'PackedSequence': return self
    def cpu(self, *args: Any, **kwargs: Any) -> 'PackedSequence': return self
    def pin_memory(self) -> 'PackedSequence': return self
    def is_pinned(self) -> bool: return self.data.is_pinned()
    def double(self) -> 'PackedSequence': return self.to(torch.float64)
    def float(self) -> 'PackedSequence': return self.to(torch.float32)
    def half(self) -> 'PackedSequence': return self.to(torch.float16)
    def long(self) -> 'PackedSequence': return self.to(torch.int64)
    def int(self) -> 'PackedSequence': return self.to(torch.int32)
    def short(self) -> 'PackedSequence': return self.to(torch.int16)
    def char(self) -> 'PackedSequence': return self.to(torch.int8)
    def byte(self) -> 'PackedSequence': return self.to(torch.uint8)

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda


def pack_padded_sequence(input: Tensor, lengths: Any, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch, (T, B, *) or (B, T, *) with `batch_first`, whose sequences have
    `lengths` (a list, or a torch or GT tensor, fetched). Unless `enforce_sorted`, the
    batch is sorted by decreasing length first, as torch sorts it."""
    lengths = torch.as_tensor(lengths.tolist() if isinstance(lengths, Tensor) else lengths,
                              dtype=torch.int64, device='cpu')
    sorted_indices = None
    if not enforce_sorted:
        lengths, order = torch.sort(lengths, descending=True)
        sorted_indices = tensor(order)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    if batch_first:
        input = input.transpose(0, 1)
    steps, batch = input.shape[0], input.shape[1]
    if len(lengths) != batch:
        raise RuntimeError(f'Expected `len(lengths)` to be equal to batch_size, but got '
                           f'{len(lengths)} (batch_size={batch})')
    if enforce_sorted and bool((lengths[1:] > lengths[:-1]).any()):
        raise RuntimeError('`lengths` array must be sorted in decreasing order when '
                           '`enforce_sorted` is True. You can pass `enforce_sorted=False` to '
                           'pack_padded_sequence and/or pack_sequence to sidestep this '
                           'requirement if you do not need ONNX exportability.')
    if bool((lengths <= 0).any()):
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if int(lengths[0]) > steps:
        raise RuntimeError(f'pack_padded_sequence: a length of {int(lengths[0])} is longer '
                           f'than the input\'s {steps} steps')
    batch_sizes = (lengths.unsqueeze(0) > torch.arange(int(lengths[0])).unsqueeze(1)).sum(1)
    return PackedSequence(pack_steps(input, batch_sizes), batch_sizes, sorted_indices,
                          None if sorted_indices is None else tensor(_inverse(order)))


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: int | None = None
                        ) -> tuple[Tensor, Tensor]:
    """The padded batch of a packed one, in the order the sequences were given, and their
    lengths (a GT int64 tensor; torch's is a CPU tensor). Transposed before the reorder,
    as torch's is: the reordered batch is then laid out as a fresh tensor, as torch's,
    and dropout's mask over it is torch's."""
    batch_sizes = sequence.batch_sizes
    steps = len(batch_sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError(f'Expected total_length to be at least the length of the '
                             f'longest sequence in input, but got total_length={total_length} '
                             f'and max sequence length being {steps}')
        steps = total_length
    padded = pad_steps(sequence.data, batch_sizes, steps, padding_value)
    lengths = tensor((batch_sizes.unsqueeze(0) > torch.arange(int(batch_sizes[0]))
                      .unsqueeze(1)).sum(1))
    if batch_first:
        padded = padded.transpose(0, 1)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(0 if batch_first else 1, sequence.unsorted_indices)
        lengths = lengths.index_select(0, sequence.unsorted_indices)
    return padded, lengths


def pack_sequence(sequences: Iterable[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of sequences of shapes (L_i, *)."""
    sequences = list(sequences)
    lengths = [sequence.shape[0] for sequence in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of sequences of a packed batch."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


def pack_steps(padded: Tensor, batch_sizes: torch.Tensor) -> Tensor:
    """The rows of a time-first padded batch (sorted by length) that `batch_sizes` counts,
    step after step: one gather."""
    batch = padded.shape[1]
    rows = [step * batch + row for step, size in enumerate(batch_sizes.tolist())
            for row in range(size)]
    return padded.flatten(0, 1).index_select(0, tensor(rows))


def pad_steps(data: Tensor, batch_sizes: torch.Tensor, steps: int,
              padding_value: float = 0.0) -> Tensor:
    """`pack_steps`' inverse: the time-first padded batch of `steps` steps, one gather from
    the data and a row of `padding_value`."""
    sizes = batch_sizes.tolist()
    batch, filler = sizes[0], data.shape[0]
    rows, offset = [], 0
    for step in range(steps):
        size = sizes[step] if step < len(sizes) else 0
        rows += list(range(offset, offset + size)) + [filler] * (batch - size)
        offset += size
    trailing = tuple(data.shape[1:])
    source = cat([data, full((1, *trailing), padding_value, dtype=data.dtype)])
    return source.index_select(0, tensor(rows)).reshape(steps, batch, *trailing)


def _inverse(permutation: torch.Tensor) -> torch.Tensor:
    inverse = torch.empty_like(permutation)
    inverse.scatter_(0, permutation, torch.arange(permutation.numel()))
    return inverse
