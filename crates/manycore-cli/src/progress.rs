//! A progress bar on stderr for long runs, drawn only when stderr is a
//! terminal (so `--json` pipelines and CI logs stay clean). It advances with
//! expected time, not with a count of steps: each step (a bench) comes with
//! the time it is expected to take ([`crate::bench::Bench::expected_secs`]),
//! and within a step the bar moves with the time spent in it, up to that
//! step's share ([`fraction`]). A ticker thread redraws it a few times a
//! second, so a long step still shows signs of life.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[derive(Debug)]
struct State {
    /// Expected seconds of all steps.
    total: f64,
    /// Expected seconds of the steps finished.
    done: f64,
    /// The current step: expected seconds and when it began.
    step: Option<(f64, Instant)>,
    msg: String,
    finished: bool,
}

impl State {
    fn fraction(&self) -> f64 {
        let (expected, elapsed) = self
            .step
            .map_or((0.0, 0.0), |(e, at)| (e, at.elapsed().as_secs_f64()));
        fraction(self.done, expected, elapsed, self.total)
    }
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    cv: Condvar,
    start: Instant,
}

/// A progress bar; a no-op when stderr is not a terminal (or when hidden).
#[derive(Debug)]
pub struct Progress {
    shared: Option<Arc<Shared>>,
    ticker: Option<JoinHandle<()>>,
}

/// How far along a run is, from 0 to 1: the expected seconds of the steps
/// done, plus the time spent in the current step but at most 95% of what
/// that step is expected to take (a step that overruns holds the bar just
/// short of its end), over the expected seconds of all steps.
pub fn fraction(done: f64, step_expected: f64, step_elapsed: f64, total: f64) -> f64 {
    if total <= 0.0 {
        return 0.0;
    }
    let current = step_elapsed.clamp(0.0, 0.95 * step_expected.max(0.0));
    ((done + current) / total).clamp(0.0, 1.0)
}

impl Progress {
    /// A bar for a run expected to take `total_secs`, drawn only if stderr
    /// is a terminal.
    pub fn new(total_secs: f64) -> Self {
        if std::io::stderr().is_terminal() {
            Self::visible(total_secs)
        } else {
            Self::hidden()
        }
    }

    /// A bar that draws nothing.
    pub fn hidden() -> Self {
        Self {
            shared: None,
            ticker: None,
        }
    }

    fn visible(total: f64) -> Self {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                total,
                done: 0.0,
                step: None,
                msg: String::new(),
                finished: false,
            }),
            cv: Condvar::new(),
            start: Instant::now(),
        });
        let s2 = shared.clone();
        let ticker = std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || {
                let mut st = s2.state.lock().unwrap_or_else(|e| e.into_inner());
                while !st.finished {
                    draw(&st, s2.start.elapsed());
                    st = s2
                        .cv
                        .wait_timeout(st, Duration::from_millis(250))
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            })
            .ok();
        Self {
            shared: Some(shared),
            ticker,
        }
    }

    fn with(&self, f: impl FnOnce(&mut State)) {
        if let Some(s) = &self.shared {
            let mut st = s.state.lock().unwrap_or_else(|e| e.into_inner());
            f(&mut st);
            draw(&st, s.start.elapsed());
        }
    }

    /// Ends the current step (if any) and begins the next, named `msg`,
    /// expected to take `expected_secs`.
    pub fn step(&self, msg: &str, expected_secs: f64) {
        self.with(|st| {
            if let Some((e, _)) = st.step.take() {
                st.done += e;
            }
            st.step = Some((expected_secs, Instant::now()));
            st.msg = msg.to_string();
        });
    }

    /// Says what is running now, within the current step.
    pub fn set_message(&self, msg: &str) {
        self.with(|st| st.msg = msg.to_string());
    }

    /// Prints a line above the bar (for warnings), then redraws the bar.
    pub fn println(&self, line: &str) {
        if self.shared.is_some() {
            let mut e = std::io::stderr().lock();
            let _ = write!(e, "\r\x1b[2K{line}\n");
            drop(e);
            self.with(|_| {});
        } else {
            eprintln!("{line}");
        }
    }

    /// Runs `f` (which may print to stdout or stderr) with the bar erased,
    /// then redraws it.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.shared {
            None => f(),
            Some(s) => {
                let st = s.state.lock().unwrap_or_else(|e| e.into_inner());
                let _ = write!(std::io::stderr(), "\r\x1b[2K");
                let r = f();
                draw(&st, s.start.elapsed());
                r
            }
        }
    }

    /// Erases the bar and stops the ticker.
    pub fn finish(&mut self) {
        if let Some(s) = self.shared.take() {
            s.state.lock().unwrap_or_else(|e| e.into_inner()).finished = true;
            s.cv.notify_all();
            if let Some(t) = self.ticker.take() {
                let _ = t.join();
            }
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

fn draw(st: &State, elapsed: Duration) {
    if st.finished {
        return;
    }
    let _ = write!(
        std::io::stderr().lock(),
        "\r\x1b[2K{}",
        render(st.fraction(), st.total, &st.msg, elapsed)
    );
}

/// The text of the bar: `[#####-----]  43%  12.3s of ~95s  message`.
pub fn render(fraction: f64, total_secs: f64, msg: &str, elapsed: Duration) -> String {
    const WIDTH: usize = 24;
    let filled = ((fraction.clamp(0.0, 1.0) * WIDTH as f64) as usize).min(WIDTH);
    let bar: String = "#".repeat(filled) + &"-".repeat(WIDTH - filled);
    let mut msg = msg.to_string();
    if msg.chars().count() > 48 {
        msg = msg.chars().take(47).collect::<String>() + "…";
    }
    format!(
        "[{bar}] {:>3.0}% {:>6.1}s of ~{total_secs:.0}s {msg}",
        fraction * 100.0,
        elapsed.as_secs_f64()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fraction_follows_expected_time() {
        // Steps of 10 s and 30 s: 40 s in all.
        assert_eq!(fraction(0.0, 10.0, 0.0, 40.0), 0.0);
        assert_eq!(fraction(0.0, 10.0, 5.0, 40.0), 0.125);
        // A step that overruns holds at 95% of its share.
        assert_eq!(fraction(0.0, 10.0, 60.0, 40.0), 9.5 / 40.0);
        // The second step, a third of the way through.
        assert_eq!(fraction(10.0, 30.0, 10.0, 40.0), 0.5);
        assert_eq!(fraction(10.0, 30.0, 1e9, 40.0), 38.5 / 40.0);
        assert_eq!(fraction(40.0, 0.0, 0.0, 40.0), 1.0);
        assert_eq!(fraction(0.0, 0.0, 1.0, 0.0), 0.0);
    }

    #[test]
    fn render_bar() {
        let s = render(0.25, 40.0, "pingpong", Duration::from_millis(1500));
        assert!(
            s.starts_with("[######------------------]  25%    1.5s of ~40s pingpong"),
            "{s}"
        );
        assert!(render(0.0, 0.0, "", Duration::ZERO).contains("  0%"));
    }

    #[test]
    fn hidden_is_noop() {
        let mut p = Progress::hidden();
        p.step("x", 1.0);
        p.set_message("y");
        p.finish();
    }
}
