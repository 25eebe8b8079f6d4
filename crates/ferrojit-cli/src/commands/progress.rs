//! A one-line spinner on stderr for work that can take seconds (conversion, freezing,
//! benchmark rounds). Shown only when stderr is a terminal, and only once the work has gone
//! on for a moment, so scripts, pipes and quick runs see nothing.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long work runs before the line appears, unless `FERROJIT_PROGRESS_AFTER_MS` says
/// otherwise (0 draws the line at once and on every message change, which is what lets a test
/// see it without depending on how fast the machine is).
const SHOW_AFTER: Duration = Duration::from_millis(400);
const TICK: Duration = Duration::from_millis(100);
const FRAMES: [char; 4] = ['|', '/', '-', '\\'];

/// A running spinner; dropping it clears the line.
pub struct Progress {
    state: Option<Spinner>,
    /// The line is drawn at once and on every message change (a zero delay).
    immediate: bool,
}

/// The delay before the line appears: `FERROJIT_PROGRESS_AFTER_MS`, or [`SHOW_AFTER`].
fn show_after() -> Duration {
    std::env::var("FERROJIT_PROGRESS_AFTER_MS")
        .ok()
        .and_then(|text| text.trim().parse::<u64>().ok())
        .map(Duration::from_millis)
        .unwrap_or(SHOW_AFTER)
}

/// Writes the spinner line (frame and message) over the current stderr line.
fn draw(frame: usize, message: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = write!(stderr, "\r\x1b[K{} {message}", FRAMES[frame % FRAMES.len()]);
    let _ = stderr.flush();
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
            return Progress {
                state: None,
                immediate: false,
            };
        }
        let delay = show_after();
        let immediate = delay.is_zero();
        if immediate {
            draw(0, message);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let text = Arc::new(Mutex::new(message.to_string()));
        let (thread_stop, thread_text) = (stop.clone(), text.clone());
        let handle = std::thread::spawn(move || {
            let mut waited = Duration::ZERO;
            let mut frame = 0usize;
            let mut shown = immediate;
            while !thread_stop.load(Ordering::Relaxed) {
                std::thread::sleep(TICK);
                waited += TICK;
                if waited < delay {
                    continue;
                }
                let message = thread_text.lock().map(|t| t.clone()).unwrap_or_default();
                draw(frame, &message);
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
            immediate,
        }
    }

    /// Replaces the message (e.g. the round a benchmark is on).
    pub fn set_message(&self, message: &str) {
        if let Some(spinner) = &self.state {
            if let Ok(mut current) = spinner.message.lock() {
                *current = message.to_string();
            }
            if self.immediate {
                draw(0, message);
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
