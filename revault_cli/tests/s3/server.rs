//! A real S3-compatible server for the tests: moto in server mode on a free
//! port of 127.0.0.1, its request log kept for counting GETs; a raw HTTP
//! client to set up and inspect buckets behind lockbox's back; and a TCP
//! proxy that can "stop the server" after a given number of bytes.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::util::{skip, Need};

/// moto accepts any credentials; the client signs with these.
pub const ACCESS_KEY: &str = "lockbox-test";
const AUTH: &str = "AWS4-HMAC-SHA256 Credential=lockbox-test/20260101/us-east-1/s3/aws4_request, \
                    SignedHeaders=host, Signature=0";

pub struct Moto {
    child: Child,
    pub port: u16,
    log: PathBuf,
    _dir: TempDir,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl Moto {
    /// Starts `moto_server` (or `$MOTO_SERVER`). `None`, with a message,
    /// when it cannot be started, unless `LOCKBOX_REQUIRE_S3_SERVER` is set
    /// (CI), which makes that a failure.
    pub fn start() -> Option<Moto> {
        let skip = |why: String| {
            skip(Need::S3Server, format!("{why}; install it with: pip install 'moto[server]'"));
            None
        };
        let bin = std::env::var_os("MOTO_SERVER").unwrap_or_else(|| "moto_server".into());
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("moto.log");
        let port = free_port();
        let child = Command::new(&bin)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(&log).unwrap())
            .spawn();
        let child = match child {
            Ok(child) => child,
            Err(e) => return skip(format!("moto_server cannot be started ({e})")),
        };
        let mut moto = Moto { child, port, log, _dir: dir };
        let deadline = Instant::now() + Duration::from_secs(60);
        while http(port, "GET", "/", &[]).is_err() {
            if let Ok(Some(status)) = moto.child.try_wait() {
                let log = fs::read_to_string(&moto.log).unwrap_or_default();
                return skip(format!("moto_server exited ({status}): {}", log.trim()));
            }
            if Instant::now() > deadline {
                return skip("moto_server did not answer within 60 s".into());
            }
            thread::sleep(Duration::from_millis(100));
        }
        Some(moto)
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn create_bucket(&self, bucket: &str) {
        let (status, body) = http(self.port, "PUT", &format!("/{bucket}"), &[]).unwrap();
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    }

    /// The object's bytes, or `None` when there is none under the key.
    pub fn get(&self, bucket: &str, key: &str) -> Option<Vec<u8>> {
        let (status, body) = http(self.port, "GET", &format!("/{bucket}/{key}"), &[]).unwrap();
        match status {
            200 => Some(body),
            404 => None,
            other => panic!("GET {bucket}/{key}: {other}: {}", String::from_utf8_lossy(&body)),
        }
    }

    pub fn put(&self, bucket: &str, key: &str, body: &[u8]) {
        let (status, text) = http(self.port, "PUT", &format!("/{bucket}/{key}"), body).unwrap();
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&text));
    }

    /// The keys of the objects under `prefix`, in order (one page of a
    /// listing: at most 1,000).
    pub fn keys(&self, bucket: &str, prefix: &str) -> Vec<String> {
        let (status, body) = http(self.port, "GET", &format!("/{bucket}?prefix={prefix}"), &[]).unwrap();
        let text = String::from_utf8_lossy(&body);
        assert_eq!(status, 200, "{text}");
        text.split("<Key>").skip(1).filter_map(|k| k.split("</Key>").next()).map(String::from).collect()
    }

    /// Multipart uploads started and neither completed nor aborted.
    pub fn open_uploads(&self, bucket: &str) -> usize {
        let (_, body) = http(self.port, "GET", &format!("/{bucket}?uploads"), &[]).unwrap();
        String::from_utf8_lossy(&body).matches("<Upload>").count()
    }

    /// GET requests the server logged for the object so far.
    pub fn gets_of(&self, bucket: &str, key: &str) -> usize {
        let log = fs::read_to_string(&self.log).unwrap();
        let needle = format!("\"GET /{bucket}/{key} ");
        log.lines().filter(|l| l.contains(&needle)).count()
    }

    /// Every request the server logged for the bucket or an object in it
    /// so far (GET, HEAD, LIST, PUT, POST, DELETE, copies), oldest first:
    /// each the quoted request line of moto's log.
    pub fn requests(&self, bucket: &str) -> Vec<String> {
        let log = fs::read_to_string(&self.log).unwrap();
        let ours = |path: &str| {
            path.strip_prefix('/')
                .and_then(|p| p.strip_prefix(bucket))
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['/', '?']))
        };
        log.lines()
            .filter_map(|l| l.split('"').nth(1))
            .filter(|request| request.split(' ').nth(1).is_some_and(ours))
            .map(String::from)
            .collect()
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One request, `Connection: close`; the status and the body.
pub fn http(port: u16, method: &str, path: &str, body: &[u8]) -> io::Result<(u16, Vec<u8>)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: {AUTH}\r\n\
         Content-Type: application/octet-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    s.write_all(body)?;
    let mut response = Vec::new();
    s.read_to_end(&mut response)?;
    let split = response.windows(4).position(|w| w == b"\r\n\r\n").ok_or(io::ErrorKind::InvalidData)?;
    let head = String::from_utf8_lossy(&response[..split]).to_string();
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).ok_or(io::ErrorKind::InvalidData)?;
    assert!(!head.to_ascii_lowercase().contains("transfer-encoding: chunked"), "{head}");
    Ok((status, response[split + 4..].to_vec()))
}

/// A TCP proxy in front of the server that "stops the server" (closes every
/// connection and refuses new ones) once `limit` bytes went through in the
/// watched direction.
pub struct Proxy {
    pub port: u16,
    stopped: Arc<AtomicBool>,
}

/// Which bytes count towards a [`Proxy`]'s limit.
#[derive(Clone, Copy, PartialEq)]
pub enum Watch {
    /// Requests (uploads).
    ToServer,
    /// Responses (downloads).
    FromServer,
}

impl Proxy {
    pub fn start(server_port: u16, watch: Watch, limit: u64) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stopped = Arc::new(AtomicBool::new(false));
        let counted = Arc::new(AtomicU64::new(0));
        let open: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let flag = Arc::clone(&stopped);
        thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if flag.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let Ok(server) = TcpStream::connect(("127.0.0.1", server_port)) else { continue };
                open.lock().unwrap().extend([client.try_clone().unwrap(), server.try_clone().unwrap()]);
                for (from, to, dir) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap(), Watch::ToServer),
                    (server, client, Watch::FromServer),
                ] {
                    let (flag, counted, open) = (Arc::clone(&flag), Arc::clone(&counted), Arc::clone(&open));
                    thread::spawn(move || pump(from, to, dir == watch, limit, &flag, &counted, &open));
                }
            }
        });
        Proxy { port, stopped }
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }
}

fn pump(
    mut from: TcpStream,
    mut to: TcpStream,
    watched: bool,
    limit: u64,
    stopped: &AtomicBool,
    counted: &AtomicU64,
    open: &Mutex<Vec<TcpStream>>,
) {
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if stopped.load(Ordering::SeqCst) {
            break;
        }
        if watched && counted.fetch_add(n as u64, Ordering::SeqCst) + n as u64 > limit {
            stopped.store(true, Ordering::SeqCst);
            for s in open.lock().unwrap().iter() {
                let _ = s.shutdown(Shutdown::Both);
            }
            break;
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}
