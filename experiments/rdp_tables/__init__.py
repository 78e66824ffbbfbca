"""Tables 3 and 4 of the RDP paper (bias/variance of randomized Forward vs K; proposals) as harness suites."""
