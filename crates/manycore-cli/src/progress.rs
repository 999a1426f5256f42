//! A progress bar on stderr for long runs, drawn only when stderr is a
//! terminal (so `--json` pipelines and CI logs stay clean). A ticker thread
//! redraws it a few times a second with the elapsed time, so a long case still
//! shows signs of life; everything else is a cheap method call.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[derive(Debug)]
struct State {
    pos: u64,
    len: u64,
    msg: String,
    done: bool,
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

impl Progress {
    /// A bar of `len` steps, drawn only if stderr is a terminal.
    pub fn new(len: u64) -> Self {
        if std::io::stderr().is_terminal() {
            Self::visible(len)
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

    fn visible(len: u64) -> Self {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                pos: 0,
                len,
                msg: String::new(),
                done: false,
            }),
            cv: Condvar::new(),
            start: Instant::now(),
        });
        let s2 = shared.clone();
        let ticker = std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || {
                let mut st = s2.state.lock().unwrap_or_else(|e| e.into_inner());
                while !st.done {
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

    /// Adds `n` more steps to the total.
    pub fn add_len(&self, n: u64) {
        self.with(|st| st.len += n);
    }

    /// Says what is running now.
    pub fn set_message(&self, msg: &str) {
        self.with(|st| st.msg = msg.to_string());
    }

    /// Advances by one step.
    pub fn inc(&self) {
        self.with(|st| {
            st.pos += 1;
            st.len = st.len.max(st.pos);
        });
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
            s.state.lock().unwrap_or_else(|e| e.into_inner()).done = true;
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
    if st.done {
        return;
    }
    let _ = write!(
        std::io::stderr().lock(),
        "\r\x1b[2K{}",
        render(st.pos, st.len, &st.msg, elapsed)
    );
}

/// The text of the bar: `[#####-----] 3/10 12.3s message`.
pub fn render(pos: u64, len: u64, msg: &str, elapsed: Duration) -> String {
    const WIDTH: u64 = 24;
    let filled = (pos.min(len) * WIDTH).checked_div(len).unwrap_or(0);
    let bar: String = (0..WIDTH)
        .map(|i| if i < filled { '#' } else { '-' })
        .collect();
    let mut msg = msg.to_string();
    if msg.chars().count() > 48 {
        msg = msg.chars().take(47).collect::<String>() + "…";
    }
    format!("[{bar}] {pos}/{len} {:>5.1}s {msg}", elapsed.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn render_bar() {
        let s = render(3, 12, "pingpong", Duration::from_millis(1500));
        assert!(
            s.starts_with("[######------------------] 3/12   1.5s pingpong"),
            "{s}"
        );
        assert!(render(0, 0, "", Duration::ZERO).contains("0/0"));
    }
    #[test]
    fn hidden_is_noop() {
        let mut p = Progress::hidden();
        p.add_len(3);
        p.set_message("x");
        p.inc();
        p.finish();
    }
}
