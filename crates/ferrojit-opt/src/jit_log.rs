//! JIT logging, as PyTorch's `PYTORCH_JIT_LOG_LEVEL` (`torch/csrc/jit/jit_log.h`), read from
//! `FERROJIT_JIT_LOG`:
//!
//! - unset: nothing is logged;
//! - empty: one line per pass that runs, naming it;
//! - `NAME[:NAME...]`, each name optionally prefixed by `>` or `>>` (PyTorch's levels: dump,
//!   update, debug): for each named pass, the graph before and after it (`[DUMP NAME] ...`);
//!   with `>` also each change the pass reports (`[UPDATE NAME] ...`); with `>>` also its
//!   debug messages.
//!
//! Everything goes to standard error. The variable is read once per process.

use std::sync::OnceLock;

/// How much to log for a pass, PyTorch's `JitLoggingLevels`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// The graph before and after the pass (`GRAPH_DUMP`).
    Dump,
    /// Plus each change (`GRAPH_UPDATE`).
    Update,
    /// Plus debug messages (`GRAPH_DEBUG`).
    Debug,
}

/// What `FERROJIT_JIT_LOG` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogSetting {
    Off,
    /// Name each pass as it runs.
    ListPasses,
    /// Log the named passes at their levels.
    Passes(Vec<(String, LogLevel)>),
}

impl LogSetting {
    /// Parses the variable's value (None when unset).
    pub fn parse(value: Option<&str>) -> LogSetting {
        let Some(value) = value else {
            return LogSetting::Off;
        };
        let entries: Vec<(String, LogLevel)> = value
            .split(':')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
            .map(|entry| {
                let name = entry.trim_start_matches('>');
                let level = match entry.len() - name.len() {
                    0 => LogLevel::Dump,
                    1 => LogLevel::Update,
                    _ => LogLevel::Debug,
                };
                (name.to_string(), level)
            })
            .collect();
        if entries.is_empty() {
            LogSetting::ListPasses
        } else {
            LogSetting::Passes(entries)
        }
    }

    /// The level asked for `pass`, if any.
    pub fn level_for(&self, pass: &str) -> Option<LogLevel> {
        match self {
            LogSetting::Passes(entries) => entries
                .iter()
                .filter(|(name, _)| name == pass)
                .map(|&(_, level)| level)
                .max(),
            _ => None,
        }
    }
}

/// The process's setting, from `FERROJIT_JIT_LOG`.
pub fn setting() -> &'static LogSetting {
    static SETTING: OnceLock<LogSetting> = OnceLock::new();
    SETTING.get_or_init(|| LogSetting::parse(std::env::var("FERROJIT_JIT_LOG").ok().as_deref()))
}

/// Whether `pass` logs at `level` or above.
pub fn enabled(pass: &str, level: LogLevel) -> bool {
    setting()
        .level_for(pass)
        .is_some_and(|asked| asked >= level)
}

/// Logs `message` for `pass` at `level`, if asked for.
pub fn log(pass: &str, level: LogLevel, message: impl FnOnce() -> String) {
    if enabled(pass, level) {
        let tag = match level {
            LogLevel::Dump => "DUMP",
            LogLevel::Update => "UPDATE",
            LogLevel::Debug => "DEBUG",
        };
        eprintln!("[{tag} {pass}] {}", message());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_as_pytorch_levels() {
        assert_eq!(LogSetting::parse(None), LogSetting::Off);
        assert_eq!(LogSetting::parse(Some("")), LogSetting::ListPasses);
        let setting = LogSetting::parse(Some("dce:>constant_pooling:>>canonicalize"));
        assert_eq!(setting.level_for("dce"), Some(LogLevel::Dump));
        assert_eq!(
            setting.level_for("constant_pooling"),
            Some(LogLevel::Update)
        );
        assert_eq!(setting.level_for("canonicalize"), Some(LogLevel::Debug));
        assert_eq!(setting.level_for("cleanup"), None);
    }
}
