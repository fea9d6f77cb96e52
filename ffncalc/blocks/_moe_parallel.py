"""A mixture's reference module as one device of several sharing its routed experts (moe.py's expert_parallel)."""

from __future__ import annotations

from functools import cache


@cache
def expert_parallel():
    import torch
    from torch import nn

    class ExpertParallel(nn.Module):
        """One device's share of a mixture whose routed experts are split over ``ep`` devices, n_experts / ep each in
        order (DeepSeek-V3 §3.4's dispatch and combine, as DeepEP runs them): the device routes its own tokens,
        sends each token-slot to the device holding its expert (``exchange``: an all-to-all of the counts, the expert
        ids and the rows), runs its own experts on what it receives, and sends their outputs back (a second
        all-to-all), where they are weighted and summed; the router, the shared experts and the rest whole on every
        device. ``exchange(tensor, send_counts, receive_counts)`` returns what the others sent."""

        def __init__(self, moe: nn.Module, rank: int, ep: int, exchange):
            super().__init__()
            self.per, self.ep, self.exchange = moe.n_experts // ep, ep, exchange
            self.first = rank * self.per
            moe.experts = nn.ModuleList(moe.experts[self.first : self.first + self.per])  # the others' freed
            self.moe = moe

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            m, shape = self.moe, x.shape
            flat = x.reshape(-1, shape[-1])
            experts, weights = m.route(m.router(flat).softmax(dim=-1))
            token_of_slot = torch.arange(flat.shape[0], device=x.device).repeat_interleave(m.top_k)
            expert_of_slot, weight_of_slot = experts.reshape(-1), weights.reshape(-1)
            order = torch.argsort(expert_of_slot // self.per, stable=True)  # slots grouped by the device they go to
            send = torch.bincount(expert_of_slot // self.per, minlength=self.ep)
            receive = self.exchange(send, [1] * self.ep, [1] * self.ep)
            send_n, receive_n = send.tolist(), receive.tolist()
            ids = self.exchange(expert_of_slot[order], send_n, receive_n) - self.first
            rows = self.exchange(flat[token_of_slot[order]], send_n, receive_n)
            done = torch.zeros_like(rows)
            for e, expert in enumerate(m.experts):
                slots = (ids == e).nonzero().squeeze(-1)
                if slots.numel():
                    done[slots] = expert(rows[slots])
            back = self.exchange(done, receive_n, send_n)
            out = torch.zeros_like(flat)
            out.index_add_(0, token_of_slot[order], back * weight_of_slot[order, None].to(flat.dtype))
            return m.finish(flat, out).reshape(shape)

    return ExpertParallel
