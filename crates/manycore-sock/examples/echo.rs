//! An echo server and its client in two processes, over shared memory.
//!
//! ```sh
//! cargo run --release -p manycore-sock --example echo
//! ```
//!
//! Without arguments the program is the server: it binds a listener in a
//! fresh directory namespace of its own (so that parallel runs do not
//! clash), starts itself again as the client (`echo client <dir>`),
//! echoes what the client sends until it closes, and removes the
//! namespace. The client sends a few messages, checks every echo, closes
//! its writing side and expects EOF. Every wait is bounded, so a failure
//! ends the run with an error instead of a hang.
//!
//! The two roles can also run in two terminals (start the client within
//! ten seconds of the server):
//!
//! ```sh
//! cargo run -p manycore-sock --example echo -- server /tmp/echo-demo
//! cargo run -p manycore-sock --example echo -- client /tmp/echo-demo
//! ```

use manycore_sock::{Namespace, ShmListener, ShmStream, SockAddr};
use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode};
use std::time::{Duration, Instant};

/// The port of the echo service in its namespace.
const PORT: u32 = 7;
/// Bound on every wait: accept, connect, each read and write, the child.
const TIMEOUT: Duration = Duration::from_secs(10);

const MESSAGES: [&[u8]; 4] = [b"hello", b"over shared memory", &[0u8; 1000], b"bye"];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let res = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        [] => run_both(),
        ["server", dir] => server(Path::new(dir), None),
        ["client", dir] => client(Path::new(dir)),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "usage: echo [server <dir> | client <dir>]",
        )),
    };
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("echo: {e}");
            ExitCode::FAILURE
        }
    }
}

fn addr(dir: &Path) -> SockAddr {
    Namespace::dir(dir).addr(PORT)
}

/// Removes the namespace directory when the server is done (also on error).
struct RemoveDir(PathBuf);

impl Drop for RemoveDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The server in this process, the client in a child process.
fn run_both() -> io::Result<()> {
    let dir = std::env::temp_dir().join(format!("manycore-echo-{}", std::process::id()));
    let _cleanup = RemoveDir(dir.clone());
    server(&dir, Some(&dir))
}

/// Serves one client. With `spawn_client`, first starts this program again
/// as the client of that namespace and waits for it at the end.
fn server(dir: &Path, spawn_client: Option<&Path>) -> io::Result<()> {
    let listener = ShmListener::bind(&addr(dir))?;
    listener.set_accept_timeout(Some(TIMEOUT))?;
    println!("server: listening on {}", listener.local_addr()?);
    let mut child = match spawn_client {
        Some(d) => Some(
            Command::new(std::env::current_exe()?)
                .arg("client")
                .arg(d)
                .spawn()?,
        ),
        None => None,
    };
    let served = serve_one(&listener);
    let child_ok = match child.as_mut() {
        Some(c) => wait_bounded(c)?,
        None => true,
    };
    served?;
    if !child_ok {
        return Err(io::Error::other("the client failed"));
    }
    println!("server: done");
    Ok(())
}

fn serve_one(listener: &ShmListener) -> io::Result<()> {
    let (mut stream, peer) = listener.accept()?;
    println!("server: connection from {peer}");
    stream.set_read_timeout(Some(TIMEOUT))?;
    stream.set_write_timeout(Some(TIMEOUT))?;
    let mut buf = [0u8; 4096];
    let mut total = 0;
    loop {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            break; // the client closed its writing side
        }
        stream.write_all(&buf[..n])?;
        total += n;
    }
    println!("server: echoed {total} bytes");
    Ok(())
}

/// Waits for the child at most `TIMEOUT`; kills it after that.
fn wait_bounded(child: &mut Child) -> io::Result<bool> {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status.success());
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(false);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn client(dir: &Path) -> io::Result<()> {
    let mut stream = ShmStream::connect_timeout(&addr(dir), TIMEOUT)?;
    stream.set_read_timeout(Some(TIMEOUT))?;
    stream.set_write_timeout(Some(TIMEOUT))?;
    for msg in MESSAGES {
        stream.write_all(msg)?;
        let mut back = vec![0u8; msg.len()];
        stream.read_exact(&mut back)?;
        if back != msg {
            return Err(io::Error::other("the echo differs from the message"));
        }
        println!("client: {} bytes echoed", msg.len());
    }
    stream.shutdown(Shutdown::Write)?;
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest)?;
    if !rest.is_empty() {
        return Err(io::Error::other("unexpected bytes after the last echo"));
    }
    println!("client: done");
    Ok(())
}
