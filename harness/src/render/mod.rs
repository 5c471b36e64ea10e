//! Render: the per-run material a case needs (certificates, templated names).

pub mod certs;
