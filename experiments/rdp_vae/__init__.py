"""The structured VAE of the RDP paper (Sec. 4, 5.2, Table 5, Fig. 2) on the fortunes corpus; see README.md."""
