//! The one error type of the summarizer. Every message starts with the file it is about, then
//! the field path, so a reader can go straight to the spot:
//! `dump.json: configs[0].dynamic_listeners[3].active_state.listener.filter_chains: invalid
//! type: string "x", expected a sequence (line 40, column 12)`.

use std::fmt;

#[derive(Debug, thiserror::Error)]
pub enum DumpError {
    /// Not readable: missing, not a regular file, or larger than the limit.
    #[error("{origin}: cannot read: {reason}")]
    Read { origin: String, reason: String },
    /// The size limit setting itself is wrong.
    #[error("{message}")]
    Limit { message: String },
    /// The bytes are not JSON/YAML, or a field has the wrong type.
    #[error("{origin}: {}", located(.path, .message, *.line, *.column))]
    Parse {
        origin: String,
        /// Field path such as `configs[0].dynamic_listeners[3]`; `None` at the top level.
        path: Option<String>,
        message: String,
        line: Option<usize>,
        column: Option<usize>,
    },
    /// Well-formed, but not a shape this module understands (not a dump, a listener without a
    /// name, ...).
    #[error("{origin}: {}", located(.path, .message, None, None))]
    Shape { origin: String, path: Option<String>, message: String },
}

impl DumpError {
    pub(super) fn shape(origin: &str, path: Option<String>, message: impl Into<String>) -> Self {
        DumpError::Shape { origin: origin.to_string(), path, message: message.into() }
    }

    /// The field path the error is about, if any.
    pub fn path(&self) -> Option<&str> {
        match self {
            DumpError::Read { .. } | DumpError::Limit { .. } => None,
            DumpError::Parse { path, .. } | DumpError::Shape { path, .. } => path.as_deref(),
        }
    }
}

fn located<'a>(path: &'a Option<String>, message: &'a str, line: Option<usize>, column: Option<usize>) -> Located<'a> {
    Located { path: path.as_deref(), message, line, column }
}

struct Located<'a> {
    path: Option<&'a str>,
    message: &'a str,
    line: Option<usize>,
    column: Option<usize>,
}

impl fmt::Display for Located<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(path) = self.path {
            write!(f, "{path}: ")?;
        }
        f.write_str(self.message)?;
        match (self.line, self.column) {
            (Some(line), Some(column)) => write!(f, " (line {line}, column {column})"),
            (Some(line), None) => write!(f, " (line {line})"),
            _ => Ok(()),
        }
    }
}
