"""Writes spec/data/multivariate_reference.lua: PyTorch 1.13's values of LowRankMultivariateNormal,
Wishart and LKJCholesky for fixed float64 inputs (log_prob, entropy, the KL divergences of the
low-rank normals), which spec/distributions_multivariate_spec.lua compares with lutorch's.
Run with a Python that has PyTorch: python3 tools/gen_multivariate_reference.py"""
import torch
import lua_reference as reference
from torch.distributions import (LowRankMultivariateNormal, MultivariateNormal, Wishart, LKJCholesky,
                                 kl_divergence)

torch.set_default_dtype(torch.float64)
t = torch.tensor

loc = t([[1.0, 2.0, 3.0], [-0.5, 0.0, 0.5]])
W = t([[1.0, 0.5], [0.2, -0.3], [0.1, 0.4]])
Dg = t([0.5, 1.0, 2.0])
x = t([[0.3, 2.5, 1.0], [1.0, -1.0, 0.0]])
lr = LowRankMultivariateNormal(loc, W, Dg)
loc2 = t([0.2, -0.1, 0.4])
W2 = t([[0.3], [-0.7], [0.2]])
D2 = t([1.5, 0.7, 0.9])
lr2 = LowRankMultivariateNormal(loc2, W2, D2)
S = t([[2.0, 0.3, -0.2], [0.3, 1.0, 0.1], [-0.2, 0.1, 1.5]])
mvn = MultivariateNormal(loc2, S)

df = t([4.5, 6.0])
wish = Wishart(df, covariance_matrix=S)
V = t([[3.0, 0.5, 0.1], [0.5, 2.0, -0.4], [0.1, -0.4, 4.0]])

lkj_conc = t([0.5, 1.0, 2.5])
lkj = LKJCholesky(3, lkj_conc)
Lv = t([[1.0, 0.0, 0.0], [0.6, 0.8, 0.0], [-0.3, 0.4, (1 - 0.09 - 0.16) ** 0.5]])

ref = {
    "lowrank": {
        "loc": loc, "cov_factor": W, "cov_diag": Dg, "value": x,
        "log_prob": lr.log_prob(x), "entropy": lr.entropy(),
        "kl_lr_lr": kl_divergence(lr, lr2), "kl_lr_mvn": kl_divergence(lr, mvn), "kl_mvn_lr": kl_divergence(mvn, lr),
        "loc2": loc2, "cov_factor2": W2, "cov_diag2": D2, "cov2": S,
    },
    "wishart": {
        "df": df, "covariance_matrix": S, "value": V,
        "log_prob": wish.log_prob(V), "entropy": wish.entropy(),
    },
    "lkj": {
        "concentration": lkj_conc, "value": Lv, "log_prob": lkj.log_prob(Lv),
    },
}
reference.write("multivariate_reference.lua", "gen_multivariate_reference.py",
                ["the inputs and PyTorch's outputs of spec/distributions_multivariate_spec.lua"], ref)
