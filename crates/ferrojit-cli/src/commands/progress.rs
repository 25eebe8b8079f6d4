//! A one-line spinner on stderr for work that can take seconds (conversion, freezing,
//! benchmark rounds). Shown only when stderr is a terminal, and only once the work has gone
//! on for a moment, so scripts, pipes and quick runs see nothing.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long work runs before the line appears.
const SHOW_AFTER: Duration = Duration::from_millis(400);
const TICK: Duration = Duration::from_millis(100);
const FRAMES: [char; 4] = ['|', '/', '-', '\\'];

/// A running spinner; dropping it clears the line.
pub struct Progress {
    state: Option<Spinner>,
}

/// The spinner thread, its stop flag and the message it shows.
struct Spinner {
    stop: Arc<AtomicBool>,
    message: Arc<Mutex<String>>,
    thread: JoinHandle<()>,
}

impl Progress {
    /// Starts a spinner showing `message` (nothing happens when stderr is not a terminal).
    pub fn start(message: &str) -> Progress {
        if !std::io::stderr().is_terminal() {
            return Progress { state: None };
        }
        let stop = Arc::new(AtomicBool::new(false));
        let text = Arc::new(Mutex::new(message.to_string()));
        let (thread_stop, thread_text) = (stop.clone(), text.clone());
        let handle = std::thread::spawn(move || {
            let mut waited = Duration::ZERO;
            let mut frame = 0usize;
            let mut shown = false;
            while !thread_stop.load(Ordering::Relaxed) {
                std::thread::sleep(TICK);
                waited += TICK;
                if waited < SHOW_AFTER {
                    continue;
                }
                let message = thread_text.lock().map(|t| t.clone()).unwrap_or_default();
                let mut stderr = std::io::stderr().lock();
                let _ = write!(stderr, "\r\x1b[K{} {message}", FRAMES[frame % FRAMES.len()]);
                let _ = stderr.flush();
                frame += 1;
                shown = true;
            }
            if shown {
                let mut stderr = std::io::stderr().lock();
                let _ = write!(stderr, "\r\x1b[K");
                let _ = stderr.flush();
            }
        });
        Progress {
            state: Some(Spinner {
                stop,
                message: text,
                thread: handle,
            }),
        }
    }

    /// Replaces the message (e.g. the round a benchmark is on).
    pub fn set_message(&self, message: &str) {
        if let Some(spinner) = &self.state {
            if let Ok(mut current) = spinner.message.lock() {
                *current = message.to_string();
            }
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(spinner) = self.state.take() {
            spinner.stop.store(true, Ordering::Relaxed);
            let _ = spinner.thread.join();
        }
    }
}
