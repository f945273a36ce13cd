#!/bin/sh
# The sources' hash: sha1 of the Makefile and every .c and .h the build reads (aicprof.c,
# aicprof.h, lib, cli, analyzer, report, fusion, preload), in name order. device.sh rebuilds when
# it changes, and the device's logs print it ("sources H"): the device's own git checkout can be
# older than the tree the call copied, so "git log" there does not say what ran. Run here at a
# commit, it gives the same H for the same tree.
#   sh tests/gpu/srchash.sh    (from the repository's root)
cat Makefile $(find aicprof.c aicprof.h lib cli analyzer report fusion preload -name '*.[ch]' |
	sort) | sha1sum | cut -c1-40
