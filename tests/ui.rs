//! The lessons in `ui-tests/`: each `fail/*.rs` must fail to compile with exactly the diagnostic
//! in its `.stderr` snapshot, and each `pass/*.rs` must compile and run (without a GPU).
//!
//! The snapshots are rustc 1.95's exact output, so on any other toolchain this test is reported
//! as ignored. Regenerate them with `TRYBUILD=overwrite cargo test --test ui`, then read them.
//! `DEVTYPE_UI=shape_ cargo test --test ui` checks only the lessons whose names start so.

#[rustversion::attr(
    not(stable(1.95)),
    ignore = "the .stderr snapshots in ui-tests/ are rustc 1.95's exact output"
)]
#[test]
fn ui() {
    let only = std::env::var("DEVTYPE_UI").unwrap_or_default();
    let t = trybuild::TestCases::new();
    t.compile_fail(format!("ui-tests/fail/{only}*.rs"));
    t.pass(format!("ui-tests/pass/{only}*.rs"));
}
