-- torch.optim: placeholder until the optimizers land
return {}
