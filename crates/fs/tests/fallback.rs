//! The same swap race where `openat2` is missing (ENOSYS): every open walks the path itself.
//! Its own test binary, since the switch is process-wide.

#![allow(clippy::disallowed_methods)]

mod common;

#[test]
fn the_walk_fallback_never_lets_an_open_or_a_write_out() {
    toolgate_fs::disable_openat2_for_tests();
    common::swap_race();
}
