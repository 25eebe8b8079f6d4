//! Prometheus metrics in the text exposition format: request counts by model and status,
//! request latency and batch size histograms, and queue depth.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds (seconds) of the latency histogram's buckets.
const LATENCY_BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

/// Upper bounds of the batch size histogram's buckets.
const BATCH_BUCKETS: [f64; 8] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0];

#[derive(Debug, Clone)]
struct Histogram {
    bounds: &'static [f64],
    /// Per bucket, not cumulative; the exposition adds them up.
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    fn new(bounds: &'static [f64]) -> Histogram {
        Histogram {
            bounds,
            counts: vec![0; bounds.len()],
            sum: 0.0,
            count: 0,
        }
    }

    fn observe(&mut self, value: f64) {
        if let Some(bucket) = self.bounds.iter().position(|&bound| value <= bound) {
            self.counts[bucket] += 1;
        }
        self.sum += value;
        self.count += 1;
    }

    fn render(&self, out: &mut String, name: &str, labels: &str) {
        let mut cumulative = 0;
        for (bound, count) in self.bounds.iter().zip(&self.counts) {
            cumulative += count;
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{bound}\"}} {cumulative}");
        }
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {}", self.count);
        let _ = writeln!(out, "{name}_sum{{{labels}}} {}", self.sum);
        let _ = writeln!(out, "{name}_count{{{labels}}} {}", self.count);
    }
}

#[derive(Debug, Default)]
struct Recorded {
    requests: BTreeMap<(String, u16), u64>,
    latency: BTreeMap<String, Histogram>,
    batch_sizes: BTreeMap<String, Histogram>,
    queue_depth: BTreeMap<String, i64>,
}

/// The server's metrics. Every update takes one short lock; the server's work per request
/// dwarfs it.
#[derive(Debug, Default)]
pub struct Metrics {
    recorded: Mutex<Recorded>,
}

/// A label value with `\`, `"` and newlines escaped, as the format requires.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

impl Metrics {
    fn with<T>(&self, update: impl FnOnce(&mut Recorded) -> T) -> T {
        // A panic elsewhere while holding the lock leaves counts that are still numbers.
        let mut recorded = self.recorded.lock().unwrap_or_else(|p| p.into_inner());
        update(&mut recorded)
    }

    /// Counts a finished request (`model` is empty for requests that name none) and, for
    /// inference requests, its latency.
    pub fn record_request(&self, model: &str, status: u16, latency: Option<Duration>) {
        self.with(|recorded| {
            *recorded
                .requests
                .entry((model.to_string(), status))
                .or_default() += 1;
            if let Some(latency) = latency {
                recorded
                    .latency
                    .entry(model.to_string())
                    .or_insert_with(|| Histogram::new(&LATENCY_BUCKETS))
                    .observe(latency.as_secs_f64());
            }
        });
    }

    /// Records one model run over `size` requests.
    pub fn record_batch(&self, model: &str, size: usize) {
        self.with(|recorded| {
            recorded
                .batch_sizes
                .entry(model.to_string())
                .or_insert_with(|| Histogram::new(&BATCH_BUCKETS))
                .observe(size as f64);
        });
    }

    /// Sets the number of requests admitted for `model` and not yet answered by it.
    pub fn set_queue_depth(&self, model: &str, depth: usize) {
        self.with(|recorded| {
            recorded
                .queue_depth
                .insert(model.to_string(), i64::try_from(depth).unwrap_or(i64::MAX));
        });
    }

    /// The text exposition (`text/plain; version=0.0.4`).
    pub fn render(&self) -> String {
        self.with(|recorded| {
            let mut out = String::new();
            out.push_str("# HELP ferrojit_requests_total Requests answered, by model and HTTP status.\n");
            out.push_str("# TYPE ferrojit_requests_total counter\n");
            for ((model, status), count) in &recorded.requests {
                let _ = writeln!(
                    out,
                    "ferrojit_requests_total{{model=\"{}\",status=\"{status}\"}} {count}",
                    escape(model)
                );
            }
            out.push_str("# HELP ferrojit_request_duration_seconds Time from an inference request's arrival to its answer.\n");
            out.push_str("# TYPE ferrojit_request_duration_seconds histogram\n");
            for (model, histogram) in &recorded.latency {
                let labels = format!("model=\"{}\"", escape(model));
                histogram.render(&mut out, "ferrojit_request_duration_seconds", &labels);
            }
            out.push_str("# HELP ferrojit_batch_size Requests served by one model run.\n");
            out.push_str("# TYPE ferrojit_batch_size histogram\n");
            for (model, histogram) in &recorded.batch_sizes {
                let labels = format!("model=\"{}\"", escape(model));
                histogram.render(&mut out, "ferrojit_batch_size", &labels);
            }
            out.push_str("# HELP ferrojit_queue_depth Requests admitted and not yet answered, by model.\n");
            out.push_str("# TYPE ferrojit_queue_depth gauge\n");
            for (model, depth) in &recorded.queue_depth {
                let _ = writeln!(out, "ferrojit_queue_depth{{model=\"{}\"}} {depth}", escape(model));
            }
            out
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_are_cumulative_and_labels_escaped() {
        let metrics = Metrics::default();
        metrics.record_batch("m\"1", 3);
        metrics.record_batch("m\"1", 1);
        metrics.record_request("m\"1", 200, Some(Duration::from_millis(3)));
        let text = metrics.render();
        assert!(
            text.contains("ferrojit_batch_size_bucket{model=\"m\\\"1\",le=\"1\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("ferrojit_batch_size_bucket{model=\"m\\\"1\",le=\"4\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("ferrojit_batch_size_sum{model=\"m\\\"1\"} 4"),
            "{text}"
        );
        assert!(text
            .contains("ferrojit_request_duration_seconds_bucket{model=\"m\\\"1\",le=\"0.005\"} 1"));
        assert!(text.contains(
            "ferrojit_request_duration_seconds_bucket{model=\"m\\\"1\",le=\"0.0025\"} 0"
        ));
        assert!(text.contains("ferrojit_requests_total{model=\"m\\\"1\",status=\"200\"} 1"));
    }
}
