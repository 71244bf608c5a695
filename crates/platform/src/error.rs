//! The one error type of the config crate.

use std::fmt;

/// A config problem, located by file and dotted path.
///
/// Displays on one line as `<file>: <path>: <message>`, for example
/// `platforms/cohet.toml: platform.pcie.lanes: expected integer, got "x"`.
/// The CLI prints exactly this line and exits with code 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file (`platforms/cohet.toml`, a user path, or `overrides`).
    pub file: String,
    /// The dotted path inside the file (`platform.pcie.lanes`), empty for
    /// problems with the file as a whole.
    pub path: String,
    /// What is wrong, in one line.
    pub message: String,
}

impl ConfigError {
    /// A new error at `path` of `file`.
    pub fn new(
        file: impl Into<String>,
        path: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        // Keep the Display to exactly one line whatever the message holds.
        let message = message.into().replace('\n', " ");
        Self {
            file: file.into(),
            path: path.into(),
            message,
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}: {}: {}", self.file, self.path, self.message)
        }
    }
}

impl std::error::Error for ConfigError {}

/// Result alias of the config crate.
pub type Result<T, E = ConfigError> = std::result::Result<T, E>;
