"""data_prep: source readers, the synthetic world, the 9 AVTrustBench task generators, similarity scorers."""
