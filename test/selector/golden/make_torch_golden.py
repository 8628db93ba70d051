"""
Golden values for the pointer-selector parity test, computed with real PyTorch modules
(nn.MultiheadAttention, nn.LayerNorm, nn.GRUCell, F.normalize, F.log_softmax, autograd).

Run (Debian: apt-get install python3-torch, i.e. PyTorch 1.13):
    /usr/bin/python3 test/selector/golden/make_torch_golden.py > test/selector/golden/torch-golden.json

The module below is written from the architecture description of the Lever-Plus pointer selector
(docs/selector.md): input_proj -> L x [MHA(query token over candidates) + residual + LayerNorm] ->
dropout -> query/cand projections -> L2 normalise -> per-step dot scores / tau with the V4-1 gate,
the V4-2 GRU state update, optional step embedding and the V4-3 redundancy penalty; chosen positions
are filled with -100 as the reference does. Eval mode (dropout inactive). Everything in float64.
"""
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class Selector(nn.Module):
    def __init__(self, d, hidden, heads, layers, shots, state_update, step_emb, redundancy, temperature):
        super().__init__()
        self.hidden, self.shots, self.temperature = hidden, shots, temperature
        self.state_update, self.use_step, self.redundancy = state_update, step_emb, redundancy
        self.input_proj = nn.Linear(d, hidden, bias=False) if d != hidden else nn.Identity()
        self.cross_attn_layers = nn.ModuleList(
            [nn.MultiheadAttention(hidden, heads, dropout=0.1, batch_first=True) for _ in range(layers)]
        )
        self.attn_norms = nn.ModuleList([nn.LayerNorm(hidden) for _ in range(layers)])
        self.query_proj = nn.Linear(hidden, hidden, bias=False)
        self.cand_proj = nn.Linear(hidden, hidden, bias=False)
        self.dropout = nn.Dropout(0.5)
        if state_update == "gate":
            self.query_update_gate = nn.Linear(2 * hidden, hidden)
        if state_update == "gru":
            self.decoder_gru = nn.GRUCell(hidden, hidden)
        if step_emb:
            self.step_emb = nn.Embedding(shots, hidden)
        if redundancy:
            self.div_lambda = nn.Parameter(torch.full((shots,), 0.1))

    def forward(self, q, c, labels):
        B, K, _ = c.shape
        qr = self.input_proj(q).unsqueeze(1)
        cr = self.input_proj(c)
        x = qr
        for attn, norm in zip(self.cross_attn_layers, self.attn_norms):
            out, _ = attn(x, cr, cr)
            x = norm(out + x)
        h = F.normalize(self.query_proj(self.dropout(x.squeeze(1))), p=2, dim=-1)
        ch = F.normalize(self.cand_proj(self.dropout(cr)), p=2, dim=-1)
        mask = torch.zeros(B, K, dtype=torch.bool)
        chosen = []
        logits = []
        for t in range(labels.shape[1]):
            hs = F.normalize(h + self.step_emb.weight[t], p=2, dim=-1) if self.use_step else h
            s = torch.einsum("bh,bkh->bk", hs, ch) / self.temperature
            if self.redundancy and t > 0:
                sim = torch.einsum("bkh,bth->bkt", ch, torch.stack(chosen, 1)).max(-1).values
                s = s - F.softplus(self.div_lambda[t]) * sim
            s = s.masked_fill(mask, -100.0)
            logits.append(s)
            idx = labels[:, t]
            mask = mask.scatter(1, idx.unsqueeze(1), True)
            cc = ch[torch.arange(B), idx]
            chosen.append(cc)
            if self.state_update == "gate":
                g = torch.sigmoid(self.query_update_gate(torch.cat([h, cc], -1)))
                h = F.normalize(g * h + (1 - g) * cc, p=2, dim=-1)
            elif self.state_update == "gru":
                h = F.normalize(self.decoder_gru(cc, h), p=2, dim=-1)
        return torch.stack(logits, 1)


CASES = [
    dict(name="gate-2heads-2layers", d=6, hidden=4, heads=2, layers=2, shots=3, state_update="gate",
         step_emb=False, redundancy=False, temperature=0.1),
    dict(name="gru-step-mmr", d=6, hidden=4, heads=1, layers=1, shots=3, state_update="gru",
         step_emb=True, redundancy=True, temperature=0.1),
    dict(name="none-identity-input", d=4, hidden=4, heads=1, layers=1, shots=2, state_update="none",
         step_emb=False, redundancy=False, temperature=0.1),
]


def main():
    torch.manual_seed(1234)
    out = []
    for case in CASES:
        cfg = {k: v for k, v in case.items() if k != "name"}
        model = Selector(**cfg).double().eval()
        with torch.no_grad():
            for p in model.parameters():
                p.add_(0.3 * torch.randn_like(p))  # exercise biases / LayerNorm affine / lambda
        B, K = 2, 5
        q = torch.randn(B, cfg["d"], dtype=torch.float64)
        c = torch.randn(B, K, cfg["d"], dtype=torch.float64)
        labels = torch.stack([torch.randperm(K)[: cfg["shots"]] for _ in range(B)])
        logits = model(q, c, labels)
        logp = F.log_softmax(logits, -1)
        seq = logp.gather(2, labels.unsqueeze(-1)).squeeze(-1).sum(1)
        loss = F.cross_entropy(logits.reshape(-1, K), labels.reshape(-1))
        model.zero_grad()
        loss.backward()
        out.append({
            "name": case["name"],
            "config": {"d": cfg["d"], "hidden": cfg["hidden"], "heads": cfg["heads"], "layers": cfg["layers"],
                       "shots": cfg["shots"], "stateUpdate": cfg["state_update"], "stepEmbedding": cfg["step_emb"],
                       "redundancy": "max" if cfg["redundancy"] else "none", "temperature": cfg["temperature"]},
            "params": {n: p.detach().reshape(-1).tolist() for n, p in model.state_dict().items()},
            "grads": {n: p.grad.reshape(-1).tolist() for n, p in model.named_parameters()},
            "query": q.tolist(),
            "cands": c.tolist(),
            "labels": labels.tolist(),
            "logProbs": logp.tolist(),
            "sequenceLogProb": seq.tolist(),
            "loss": loss.item(),
            "torch": torch.__version__,
        })
    print(json.dumps(out))


if __name__ == "__main__":
    main()
