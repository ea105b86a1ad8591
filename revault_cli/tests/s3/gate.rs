//! A TCP proxy in front of the server that holds back requests whose
//! request line starts with a given text (say, the PUT of an archive's
//! next part) until `release_at` of them have arrived, or for ever: so
//! that two writers' commits reach the server together (a race that
//! really happens, not one left to timing), or so that a writer can be
//! killed while its upload is in flight.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// How long a held request waits for the others before it goes on
/// anyway (a writer that never comes must not hang the test).
const HOLD_AT_MOST: Duration = Duration::from_secs(20);

pub struct Gate {
    port: u16,
    arrived: Arc<AtomicUsize>,
    opened: Arc<AtomicBool>,
}

impl Gate {
    /// Holds each request starting with `line_prefix` until `release_at`
    /// such requests have arrived (`usize::MAX`: never; it is dropped when
    /// the client goes away).
    pub fn start(server_port: u16, line_prefix: &str, release_at: usize) -> Gate {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let arrived = Arc::new(AtomicUsize::new(0));
        let opened = Arc::new(AtomicBool::new(false));
        let (count, open, prefix) =
            (Arc::clone(&arrived), Arc::clone(&opened), line_prefix.as_bytes().to_vec());
        thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(("127.0.0.1", server_port)) else { continue };
                let (to_server, to_client) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                let (count, open, prefix) = (Arc::clone(&count), Arc::clone(&open), prefix.clone());
                thread::spawn(move || pump(client, server, Some((&prefix, &count, &open, release_at))));
                thread::spawn(move || pump(to_client, to_server, None));
            }
        });
        Gate { port, arrived, opened }
    }

    /// Lets every held request, and every later one, through.
    pub fn open(&self) {
        self.opened.store(true, Ordering::SeqCst);
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Requests that matched so far (held, or let through).
    pub fn arrived(&self) -> usize {
        self.arrived.load(Ordering::SeqCst)
    }
}

/// A gate: the request line's start, the count of those arrived, whether
/// it was opened, how many release each other.
type Held<'a> = (&'a [u8], &'a AtomicUsize, &'a AtomicBool, usize);

fn pump(mut from: TcpStream, mut to: TcpStream, gate: Option<Held<'_>>) {
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        // A request's line comes first in the read that starts it (the
        // client sends nothing more on the connection until answered).
        if let Some((prefix, arrived, opened, release_at)) = gate {
            if buf[..n].starts_with(prefix) {
                arrived.fetch_add(1, Ordering::SeqCst);
                if release_at == usize::MAX {
                    // Never let through: the request is lost with the
                    // process that sent it (the test kills it).
                    while matches!(from.read(&mut buf), Ok(n) if n > 0) {}
                    break;
                }
                let started = Instant::now();
                let held = || arrived.load(Ordering::SeqCst) < release_at && !opened.load(Ordering::SeqCst);
                while held() && started.elapsed() < HOLD_AT_MOST {
                    thread::sleep(Duration::from_millis(5));
                }
            }
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}
