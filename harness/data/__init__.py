"""The data: the Fashion-MNIST files, the shipped float64 reference, the numpy trainer."""
