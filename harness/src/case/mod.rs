//! Cases: a folder holding `case.yaml` (what to generate, which manifests to apply, what to
//! expect per Cilium version range) and its manifest files. See `cases/README.md` for the
//! format as users write it.

pub mod api_schema;
pub mod edit;
mod expect;
mod layout;
pub mod lint_rules;
pub mod load;
pub mod manifests;
pub mod model;
pub mod problem;
mod provenance;
mod raw;
pub mod refs;
pub mod scope;
pub mod template;
pub mod version;
pub mod walk;

#[cfg(test)]
mod tests;

pub use load::{lint, load, load_text};
pub use model::*;
pub use problem::Problem;
pub use version::{CiliumVersion, VersionRange};
pub use walk::discover;
