//! How a knob operation fails: each error names the knob or path and the cause, and
//! maps to the exit status scripts see (README "Exit codes").

use std::path::PathBuf;

use crate::knobs::journal::JournalError;

/// A failed knob operation. Each names the knob or path and the cause.
#[derive(Debug, thiserror::Error)]
pub enum KnobError {
    #[error("{0}")]
    NotFound(String),
    #[error("{id}: invalid value: {reason}")]
    Invalid { id: String, reason: String },
    #[error("{id}: read-only session (--read-only): nothing is written")]
    ReadOnlySession { id: String },
    #[error("{id}: not writable: {reason}")]
    NotWritable { id: String, reason: String },
    #[error("{id}: cannot read the current value: {reason}")]
    Read { id: String, reason: String },
    #[error("{}: writing {written:?} failed: {cause}", path.display())]
    Write {
        path: PathBuf,
        written: String,
        cause: String,
    },
    #[error("{}: wrote {wrote:?} but read back {read:?}", path.display())]
    ReadBack {
        path: PathBuf,
        wrote: String,
        read: String,
    },
    #[error("{0}")]
    Journal(#[from] JournalError),
    #[error("{0}")]
    Refused(String),
    /// Another llctop process owns the knob.
    #[error("{0}")]
    Busy(String),
}

impl KnobError {
    /// Exit status for scripts (README "Exit codes").
    pub fn exit_code(&self) -> u8 {
        match self {
            KnobError::NotFound(_) => 3,
            KnobError::Invalid { .. } => 4,
            KnobError::ReadOnlySession { .. } | KnobError::NotWritable { .. } => 5,
            KnobError::Read { .. } | KnobError::Write { .. } | KnobError::Refused(_) => 6,
            KnobError::ReadBack { .. } => 7,
            KnobError::Journal(_) => 8,
            KnobError::Busy(_) => 9,
        }
    }
}
