"""Nyström-approximated self-attention (Xiong et al. 2021, "Nyströmformer: A Nyström-Based Algorithm for Approximating
Self-Attention", §3 and Algorithm 1), as transformers instantiates it (transformers 5.23.0,
models/nystromformer/modeling_nystromformer.py, ``NystromformerSelfAttention``).

Queries and keys are each scaled by d_h^(−1/4). With m = num_landmarks equal to segment_means_seq_len, the layer is
softmax attention over the whole square. Otherwise the m landmarks are the means of m segments of the sequence's
queries and keys, and per head, over n positions:

    kernel_1 = softmax(Q K̃ᵀ)     n × m over d_h       kernel_2 = softmax(Q̃ K̃ᵀ)   m × m over d_h
    kernel_3 = softmax(Q̃ Kᵀ)     m × n over d_h       Z ≈ kernel_2⁺: 6 iterations of Z ← ¼ Z (13 I − K Z (15 I −
                                                      K Z (7 I − K Z))), K Z itself a product: 4 · m³ each
    out = (kernel_1 Z) (kernel_3 V): n × m × m, then m × n × d_h and n × m × d_h

(the initial Z = Kᵀ / max column sum: no matmul). transformers' forward takes the segments as
segment_means_seq_len / num_landmarks positions each, so it runs only on a sequence of segment_means_seq_len tokens;
other lengths are counted as the paper defines them, n / m positions a segment. With conv_kernel_size, a depthwise
convolution of that many taps over each head's values along the sequence (nn.Conv2d, groups = heads, no bias) is added
to the output. Every product is what the kernel executes, in every view (``select`` "pairs")."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cache

from ..model.schema import NonNegative, Positive, SpecError
from ..model.terms import SOFTMAX_OPS
from . import register
from .attention import Attention

UNSUPPORTED = ("gate", "sinks", "window", "chunk", "kv_shared", "k_eq_v", "v_norm", "sub_norm")
PINV_ITERATIONS = 6  # NystromformerSelfAttention.iterative_inv(n_iter=6)


@register
@dataclass(frozen=True)
class NystromAttention(Attention):
    """Softmax attention approximated through m landmarks and an iterative pseudo-inverse (Nyströmformer)."""

    kind = "nystrom"
    slot = "attention"
    summary = "Nyström-approximated attention over segment-mean landmarks, and a depthwise value convolution (Xiong et al. 2021)"

    landmarks: Positive = 64  # num_landmarks
    segment_length: Positive = 64  # segment_means_seq_len: full attention where it equals landmarks
    conv_kernel: NonNegative = 65  # conv_kernel_size; 0: no convolution

    @property
    def full(self) -> bool:
        return self.landmarks == self.segment_length

    def check(self, d_model: int) -> None:
        super().check(d_model)
        for name in UNSUPPORTED:
            if getattr(self, name) not in (None, False, "none"):
                raise SpecError((name,), f"{name} is not an option of Nyström attention")
        if self.qk_norm != "none" or self.softplus_gate != "none" or self.kv_heads != self.n_heads:
            raise SpecError(("n_kv_heads",), "Nyström attention has as many key heads as query heads, and no norms")
        if self.conv_kernel and self.conv_kernel % 2 == 0:
            raise SpecError(("conv_kernel",), "an even kernel's padded convolution is one position longer than the sequence")

    def describe(self) -> str:
        how = "full attention" if self.full else f"{self.landmarks} landmarks"
        conv = f", value convolution of {self.conv_kernel}" if self.conv_kernel else ""
        return f"{super().describe()}, Nyström: {how}{conv}"

    def terms(self, e, model, seq_len: int) -> None:
        """Multi-head attention's projections and output; where the landmarks differ from the segment length, the
        Nyström products in place of QKᵀ and AV (per query: the pseudo-inverse's 24·m³ and kernel_2's m²·d_h are the
        sequence's, spread over its n tokens); the depthwise convolution's taps."""
        start = len(e.out)
        super().terms(e, model, seq_len)
        h, hd, m, n, k = self.n_heads, self.head_dim, self.landmarks, e.n, self.conv_kernel
        if not self.full:
            for i in range(start, len(e.out)):
                t = e.out[i]
                if t.name in ("attn.scores", "attn.values"):  # kernel_1 and kernel_3; kernel_3·V and (kernel_1·Z)·that
                    e.out[i] = replace(t, shape=(h, 2 * m, hd), macs=n * h * 2 * m * hd, select="pairs")
                elif t.name == "attn.softmax":  # kernel_1's and kernel_3's 2·m scores a token, kernel_2's m² a sequence
                    scores = n * h * (2 * m * seq_len + m * m)
                    e.out[i] = replace(t, elementwise=SOFTMAX_OPS * scores, scores=scores, positions=Fraction(1, seq_len))
            landmarks = Fraction(m, seq_len)  # a sequence's m landmark queries
            e.term("attn.landmarks", "core", (h, m, hd), n, numel=0, macs=n * h * m * hd, select="pairs", positions=landmarks)
            pinv = 4 * PINV_ITERATIONS * m  # each landmark row's products in the iterations: 4 a row and iteration
            e.term("attn.pinv", "core", (h, pinv, m), n, numel=0, macs=n * h * pinv * m, select="pairs", positions=landmarks)
            e.term("attn.kernel_product", "core", (h, m, m), n, numel=0, macs=n * h * m * m, select="pairs")
        if k:
            e.term("attn.conv.weight", "weight", (h, 1, k, 1), n, macs=n * h * k * hd)  # k taps a value feature

    def cached_tokens(self, tokens: int) -> int:
        return tokens

    def kept_elements(self, model) -> int:
        """Multi-head attention's (the input, Q and K as scaled, V, the heads' output); with the convolution over
        the whole square, the attention kernel's output as well as its sum with the convolution's (o's input)."""
        extra = self.n_heads * self.head_dim if self.full and self.conv_kernel else 0
        return super().kept_elements(model) + extra

    def score_bytes(self, model, seq_len: int, flash: bool = False) -> int:
        """The whole square's, as softmax attention's. Nyström (one form), 16-bit, per head, as autograd saves it in the
        reference module: the landmark queries and keys and kernel_3·V (m·d_h each), kernel_1, kernel_3 and
        kernel_1·Z (s·m each), kernel_2 and the iterations' products (6 a pass and the first Z, (6·iterations + 2)·m²),
        and kernel_2's m column sums."""
        if self.full:
            return super().score_bytes(model, seq_len, flash)
        m, hd = self.landmarks, self.head_dim
        return 2 * self.n_heads * (3 * m * hd + 3 * seq_len * m + (6 * PINV_ITERATIONS + 2) * m * m + m)

    def tensor_parallel(self, module, rank: int, tp: int):
        raise NotImplementedError("Nyström attention: no tensor-parallel form here")

    def torch_module(self, model, causal: bool):
        return _module()(self, model, causal)


@cache
def _module():
    import torch
    from torch.nn import functional as F

    from ._torch import Conv2d, MatMul
    from .attention import _module as attention_module

    class Nystrom(attention_module()):
        """Multi-head attention whose ``attend`` runs the Nyström approximation (or the whole square where the
        landmarks are the segment length), and adds the depthwise convolution over the values."""

        def __init__(self, spec: NystromAttention, model, causal: bool):
            super().__init__(spec, model, causal)
            self.m, self.full_square = spec.landmarks, spec.full
            h, k = spec.n_heads, spec.conv_kernel
            if k:
                self.conv = Conv2d(h, h, kernel_size=(k, 1), padding=(k // 2, 0), bias=False, groups=h)
            self.landmarks, self.pinv, self.kernel_product = MatMul(), MatMul(), MatMul()

        def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
            hd = q.shape[-1]
            q, k = q * hd**-0.25, k * hd**-0.25
            if self.full_square:
                out = super().attend(q, k, v, x)
            else:
                b, h, s, _ = q.shape
                m = self.m

                def means(t: torch.Tensor) -> torch.Tensor:  # the m segments' means
                    return F.adaptive_avg_pool1d(t.reshape(b * h, s, hd).transpose(1, 2), m).transpose(1, 2).view(b, h, m, hd)

                ql, kl = means(q), means(k)
                kernel_1 = self.scores(q, kl.transpose(-2, -1)).softmax(dim=-1)
                kernel_2 = self.landmarks(ql, kl.transpose(-2, -1)).softmax(dim=-1)
                kernel_3 = self.scores(ql, k.transpose(-2, -1)).softmax(dim=-1)
                eye = torch.eye(m, device=q.device, dtype=q.dtype)
                z = kernel_2.transpose(-2, -1) / kernel_2.sum(dim=-2).amax()
                for _ in range(PINV_ITERATIONS):
                    kz = self.pinv(kernel_2, z)
                    z = self.pinv(0.25 * z, 13 * eye - self.pinv(kz, 15 * eye - self.pinv(kz, 7 * eye - kz)))
                out = self.values(self.kernel_product(kernel_1, z), self.values(kernel_3, v))
            if hasattr(self, "conv"):
                out = out + self.conv(v)
            return out

    return Nystrom
