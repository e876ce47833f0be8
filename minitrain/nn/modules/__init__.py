"""The layers, laid out as PyTorch's torch.nn.modules: `Module` and its containers, and one file
per family of layers. `minitrain.nn` re-exports them all (`nn.Linear`); these paths are for
programs that import from PyTorch's module files (`torch.nn.modules.linear`)."""
