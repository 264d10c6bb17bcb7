//! `cargo xtask`: repository automation (CI, tidy checks, benchmarks).

fn main() -> anyhow::Result<()> {
    anyhow::bail!("xtask: not yet implemented")
}
