//! An echo server and its clients on one tokio thread, over shared memory.
//!
//! ```sh
//! cargo run --release -p manycore-sock --features tokio --example tokio_echo
//! ```
//!
//! The server (`AsyncShmListener`) accepts `CLIENTS` connections and echoes
//! each in a task of its own; every client (`AsyncShmStream`) sends a few
//! messages, closes its writing side and checks the echo. Reads and writes
//! wait on the streams' readiness descriptors, which tokio's reactor
//! polls; a watchdog thread ends the run if it ever takes longer than
//! `TIMEOUT`.

use manycore_sock::{AsyncShmListener, AsyncShmStream, Namespace};
use std::io;
use std::process::ExitCode;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const CLIENTS: usize = 8;
const TIMEOUT: Duration = Duration::from_secs(30);
const MESSAGES: [&[u8]; 3] = [b"hello", b"over shared memory", &[7u8; 100_000]];

async fn echo(mut s: AsyncShmStream) -> io::Result<usize> {
    let mut buf = vec![0u8; 16 << 10];
    let mut total = 0;
    loop {
        let n = s.read(&mut buf).await?;
        if n == 0 {
            s.shutdown().await?;
            return Ok(total);
        }
        s.write_all(&buf[..n]).await?;
        total += n;
    }
}

async fn client(s: AsyncShmStream) -> io::Result<()> {
    let sent: Vec<u8> = MESSAGES.concat();
    // Write in one task and read in this one: the echo of a large message
    // comes back while it is still being sent.
    let (mut rd, mut wr) = tokio::io::split(s);
    let send = tokio::spawn(async move {
        for m in MESSAGES {
            wr.write_all(m).await?;
        }
        wr.shutdown().await
    });
    let mut back = Vec::new();
    rd.read_to_end(&mut back).await?;
    send.await.map_err(io::Error::other)??;
    if back != sent {
        return Err(io::Error::other("echo differs"));
    }
    Ok(())
}

async fn run() -> io::Result<()> {
    let listener = AsyncShmListener::bind(&Namespace::private().addr(0))?;
    let addr = listener.local_addr()?;
    println!("server: listening on {addr}");
    let server = tokio::spawn(async move {
        let mut tasks = Vec::new();
        for _ in 0..CLIENTS {
            let (s, peer) = listener.accept().await?;
            println!("server: connection from {peer}");
            tasks.push(tokio::spawn(echo(s)));
        }
        let mut total = 0;
        for t in tasks {
            total += t.await.map_err(io::Error::other)??;
        }
        Ok::<_, io::Error>(total)
    });
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| AsyncShmStream::connect(&addr).map(|s| tokio::spawn(client(s))))
        .collect::<io::Result<_>>()?;
    for c in clients {
        c.await.map_err(io::Error::other)??;
    }
    let total = server.await.map_err(io::Error::other)??;
    println!("server: echoed {total} bytes to {CLIENTS} clients");
    Ok(())
}

fn main() -> ExitCode {
    std::thread::spawn(|| {
        std::thread::sleep(TIMEOUT);
        eprintln!("tokio_echo: no result after {TIMEOUT:?}");
        std::process::exit(1);
    });
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("tokio_echo: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(run()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tokio_echo: {e}");
            ExitCode::FAILURE
        }
    }
}
