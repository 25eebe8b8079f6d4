//! A small blocking HTTP/1.1 client over one keep-alive connection: what the tests and the
//! load generator need to talk to the server, and nothing more (no TLS, no redirects).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// One answer.
#[derive(Debug, Clone)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// Header names (lower case) and values, in order.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl HttpResponse {
    /// The first header called `name` (compared without case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The body as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The JSON part of the body: all of it, or the first `Inference-Header-Content-Length`
    /// bytes when binary data follows.
    pub fn json(&self) -> io::Result<serde_json::Value> {
        let length = match self.header("inference-header-content-length") {
            Some(length) => length
                .parse::<usize>()
                .ok()
                .filter(|&length| length <= self.body.len())
                .ok_or_else(|| invalid(format!("bad Inference-Header-Content-Length {length}")))?,
            None => self.body.len(),
        };
        serde_json::from_slice(&self.body[..length]).map_err(|e| invalid(e.to_string()))
    }
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

/// A connection to one server.
pub struct HttpClient {
    reader: BufReader<TcpStream>,
}

/// The longest status line or header this client reads.
const MAX_LINE: usize = 16 * 1024;

impl HttpClient {
    /// Connects, with `timeout` on each read and write.
    pub fn connect(address: SocketAddr, timeout: Duration) -> io::Result<HttpClient> {
        let stream = TcpStream::connect_timeout(&address, timeout)?;
        stream.set_read_timeout(Some(timeout))?;
        stream.set_write_timeout(Some(timeout))?;
        stream.set_nodelay(true)?;
        Ok(HttpClient {
            reader: BufReader::new(stream),
        })
    }

    fn line(&mut self) -> io::Result<String> {
        let mut line = Vec::new();
        (&mut self.reader)
            .take(MAX_LINE as u64)
            .read_until(b'\n', &mut line)?;
        if !line.ends_with(b"\n") {
            return Err(invalid(
                "the server closed the connection mid-line".to_string(),
            ));
        }
        Ok(String::from_utf8_lossy(&line).trim_end().to_string())
    }

    /// Sends one request and reads its answer.
    pub fn request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> io::Result<HttpResponse> {
        let mut head = format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\n");
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        let stream = self.reader.get_mut();
        stream.write_all(head.as_bytes())?;
        stream.write_all(body)?;
        stream.flush()?;

        let status_line = self.line()?;
        let status = status_line
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .ok_or_else(|| invalid(format!("bad status line '{status_line}'")))?;
        let mut headers = Vec::new();
        loop {
            let line = self.line()?;
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
            }
        }
        let mut response = HttpResponse {
            status,
            headers,
            body: Vec::new(),
        };
        match response.header("content-length") {
            Some(length) => {
                let length: usize = length
                    .parse()
                    .map_err(|_| invalid(format!("bad Content-Length '{length}'")))?;
                response.body = vec![0; length];
                self.reader.read_exact(&mut response.body)?;
            }
            None => {
                self.reader.read_to_end(&mut response.body)?;
            }
        }
        Ok(response)
    }
}

/// Opens a connection, sends one request, and returns the answer.
pub fn send(
    address: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> io::Result<HttpResponse> {
    HttpClient::connect(address, Duration::from_secs(30))?.request(method, path, headers, body)
}
