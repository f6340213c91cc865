//! The benchmarks that measure a process (its peak memory, its CPU time) run it from a
//! child of their own, which starts it alone and reads `getrusage(RUSAGE_CHILDREN)`:
//! that figure then holds the one process, not the benchmark's own peak.

use std::process::Command;

/// Runs this executable again with `var` set to `spec` (the child's part of the
/// benchmark reads it) and returns the numbers the child printed, in order. A child
/// that fails fails the benchmark with its stderr.
pub fn numbers_from_child(var: &str, spec: &str) -> Vec<u64> {
    let child = Command::new(std::env::current_exe().expect("own path"))
        .env(var, spec)
        .output()
        .expect("the measuring child runs");
    assert!(
        child.status.success(),
        "the measuring child failed: {}",
        String::from_utf8_lossy(&child.stderr)
    );
    String::from_utf8_lossy(&child.stdout)
        .split_whitespace()
        .map(|n| n.parse().expect("a number"))
        .collect()
}
