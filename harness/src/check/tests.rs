//! check tests
