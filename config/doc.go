// Package config reads resyncd's YAML configuration through viper — file,
// RESYNCD_* environment variables, command-line overrides — into a typed,
// validated Config; it is the only package that imports viper, and it never
// talks to a cluster.
package config
