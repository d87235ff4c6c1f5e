"""The Relations Game (Shanahan et al., ICML 2020): visual relations over objects on a 3x3 grid."""
