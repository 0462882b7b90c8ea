//! `llctop mcp` on stdio, behind a gate: llctop reads stdin itself, in lines of at most
//! [`MAX_MESSAGE`] bytes, and passes rmcp only what is a JSON-RPC message. Anything else is
//! answered here, as JSON-RPC asks — invalid UTF-8 or JSON: `-32700 Parse error`; valid
//! JSON that is not one JSON-RPC message (a batch, a missing `jsonrpc`): `-32600 Invalid
//! Request`; a line longer than the bound: `-32600` too, its bytes dropped as they come
//! (memory stays bounded) — so a client is never left waiting on silence. Stdout has one
//! writer ([`pump`]): rmcp's messages and these answers go out as whole lines, never
//! interleaved. When stdin closes, the server's end is asked at once ([`Ended`]): the
//! collector stops, tools waiting on it return, helpers are stopped — within a second,
//! whatever was running.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::sync::mpsc;

/// The longest message a client may send, bytes.
pub const MAX_MESSAGE: usize = 4 << 20;

/// Set when stdin has closed: the server ends.
pub type Ended = Arc<AtomicBool>;

/// What the stdin thread saw.
#[derive(Debug, PartialEq)]
enum Input {
    Line(Vec<u8>),
    /// A line longer than [`MAX_MESSAGE`] (its bytes dropped).
    TooLong(usize),
    Eof,
}

/// Split `r` into lines of at most `max` bytes, sending each; a longer line is reported
/// once with its length, its bytes not kept.
fn split_lines(mut r: impl std::io::Read, max: usize, mut send: impl FnMut(Input) -> bool) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut cur = Vec::new();
    let mut over: Option<usize> = None;
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let mut rest = &buf[..n];
        while !rest.is_empty() {
            let (chunk, nl) = match rest.iter().position(|&b| b == b'\n') {
                Some(i) => (&rest[..i], true),
                None => (rest, false),
            };
            rest = if nl { &rest[chunk.len() + 1..] } else { &[] };
            match &mut over {
                Some(len) => *len += chunk.len(),
                None if cur.len() + chunk.len() > max => {
                    over = Some(cur.len() + chunk.len());
                    cur.clear();
                }
                None => cur.extend_from_slice(chunk),
            }
            if nl {
                let msg = match over.take() {
                    Some(len) => Input::TooLong(len),
                    None => Input::Line(std::mem::take(&mut cur)),
                };
                if !send(msg) {
                    return;
                }
            }
        }
    }
    if let Some(len) = over {
        send(Input::TooLong(len));
    } else if !cur.is_empty() {
        send(Input::Line(cur));
    }
    send(Input::Eof);
}

/// The answer to a line that is not a JSON-RPC message (None: pass it to rmcp).
fn check(line: &[u8]) -> Option<Value> {
    let err = |id: Value, code: i64, msg: String| {
        Some(json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": msg}}))
    };
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    let Ok(text) = std::str::from_utf8(line) else {
        return err(
            Value::Null,
            -32700,
            "Parse error: the message is not UTF-8".into(),
        );
    };
    let v: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return err(Value::Null, -32700, format!("Parse error: {e}")),
    };
    let Some(obj) = v.as_object() else {
        return err(
            Value::Null,
            -32600,
            if v.is_array() {
                "Invalid Request: batches are not taken (send one message per line)".into()
            } else {
                "Invalid Request: a message is a JSON object".into()
            },
        );
    };
    let id = obj
        .get("id")
        .filter(|i| i.is_string() || i.is_number())
        .cloned()
        .unwrap_or(Value::Null);
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return err(
            id,
            -32600,
            "Invalid Request: \"jsonrpc\" must be \"2.0\"".into(),
        );
    }
    let method = obj.get("method").is_some_and(Value::is_string);
    let response =
        obj.contains_key("id") && (obj.contains_key("result") || obj.contains_key("error"));
    if !method && !response {
        return err(
            id,
            -32600,
            "Invalid Request: neither a request or notification (\"method\") nor a response".into(),
        );
    }
    None
}

/// Serve `server` on stdin/stdout through the gate until stdin closes (then `ended` is
/// set and the stop asked for) or rmcp ends.
pub async fn serve(server: super::Server, ended: Ended) -> Result<(), String> {
    use rmcp::ServiceExt as _;
    let (to_rmcp, rmcp_in) = tokio::io::duplex(1 << 20);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(1 << 20);
    let (answers, answered) = mpsc::unbounded_channel::<Value>();
    let (tx, rx) = mpsc::channel::<Input>(16);
    std::thread::Builder::new()
        .name("llctop-mcp-stdin".into())
        .spawn(move || {
            split_lines(std::io::stdin().lock(), MAX_MESSAGE, |m| {
                tx.blocking_send(m).is_ok()
            });
        })
        .map_err(|e| e.to_string())?;
    tokio::spawn(gate(rx, to_rmcp, answers, Arc::clone(&ended)));
    tokio::spawn(pump(from_rmcp, answered));
    let service = server
        .serve((rmcp_in, rmcp_out))
        .await
        .map_err(|e| e.to_string())?;
    service.waiting().await.map_err(|e| e.to_string())?;
    Ok(())
}

/// The gate: each line from stdin to rmcp, or answered here.
async fn gate(
    mut rx: mpsc::Receiver<Input>,
    mut to_rmcp: tokio::io::DuplexStream,
    answers: mpsc::UnboundedSender<Value>,
    ended: Ended,
) {
    while let Some(m) = rx.recv().await {
        match m {
            Input::Line(l) => match check(&l) {
                Some(a) => {
                    let _ = answers.send(a);
                }
                None if l.iter().all(u8::is_ascii_whitespace) => {}
                None => {
                    if to_rmcp.write_all(&l).await.is_err()
                        || to_rmcp.write_all(b"\n").await.is_err()
                    {
                        break;
                    }
                }
            },
            Input::TooLong(n) => {
                let _ = answers.send(json!({"jsonrpc": "2.0", "id": null, "error": {
                    "code": -32600,
                    "message": format!("Invalid Request: a message of {n} bytes; at most {MAX_MESSAGE} are read"),
                }}));
            }
            Input::Eof => break,
        }
    }
    // The client is gone: the server ends (the collector, the tools waiting on it, the
    // helpers), whatever was running.
    ended.store(true, Ordering::Relaxed);
    crate::signals::request();
    let _ = to_rmcp.shutdown().await;
}

/// The one writer of stdout: rmcp's lines and the gate's answers, whole lines each.
async fn pump(from_rmcp: tokio::io::DuplexStream, mut answers: mpsc::UnboundedReceiver<Value>) {
    let mut out = tokio::io::stdout();
    let mut lines = BufReader::new(from_rmcp).split(b'\n');
    let mut rmcp_open = true;
    loop {
        let line = tokio::select! {
            l = lines.next_segment(), if rmcp_open => match l {
                Ok(Some(mut l)) => { l.push(b'\n'); l }
                _ => { rmcp_open = false; continue; }
            },
            a = answers.recv() => match a {
                Some(a) => {
                    let mut l = a.to_string().into_bytes();
                    l.push(b'\n');
                    l
                }
                None if rmcp_open => continue,
                None => break,
            },
        };
        if out.write_all(&line).await.is_err() || out.flush().await.is_err() {
            // Nobody reads stdout: the server has no one to answer.
            crate::signals::request();
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(input: &[u8], max: usize) -> Vec<Input> {
        let mut got = Vec::new();
        split_lines(input, max, |m| {
            got.push(m);
            true
        });
        got
    }

    #[test]
    fn long_lines_are_dropped_and_said_short_ones_pass() {
        let mut input = b"{\"a\":1}\n".to_vec();
        input.extend(vec![b'x'; 100]);
        input.extend(b"\n{\"b\":2}\nlast");
        let got = split(&input, 50);
        assert_eq!(
            got,
            vec![
                Input::Line(b"{\"a\":1}".to_vec()),
                Input::TooLong(100),
                Input::Line(b"{\"b\":2}".to_vec()),
                Input::Line(b"last".to_vec()),
                Input::Eof
            ]
        );
    }

    proptest::proptest! {
        /// Any bytes a client sends: split into lines within the bound (never a panic,
        /// never more kept than the bound), and each line either passed on as a JSON-RPC
        /// message or answered with a JSON-RPC error object.
        #[test]
        fn any_bytes_are_split_and_answered(
            input in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..4096),
            max in 1usize..512,
        ) {
            let mut count = 0;
            split_lines(&input[..], max, |m| {
                if let Input::Line(l) = &m {
                    assert!(l.len() <= max);
                    if let Some(a) = check(l) {
                        assert_eq!(a["jsonrpc"], "2.0");
                        let code = a["error"]["code"].as_i64().unwrap();
                        assert!(code == -32700 || code == -32600, "{a}");
                        assert!(a["id"].is_null() || a["id"].is_number() || a["id"].is_string());
                    } else if !l.iter().all(u8::is_ascii_whitespace) {
                        let v: serde_json::Value = serde_json::from_slice(l).unwrap();
                        assert_eq!(v["jsonrpc"], "2.0");
                    }
                }
                count += 1;
                true
            });
            proptest::prop_assert!(count >= 1, "at least the end");
        }

        /// JSON-RPC-shaped messages with any id and method are passed on.
        #[test]
        fn well_formed_messages_pass(id in 0u64..u64::MAX, method in "[a-z/]{1,30}") {
            let m = json!({"jsonrpc": "2.0", "id": id, "method": method}).to_string();
            proptest::prop_assert!(check(m.as_bytes()).is_none());
        }
    }

    #[test]
    fn what_is_not_json_rpc_gets_its_error() {
        let code = |l: &[u8]| check(l).map(|v| v["error"]["code"].as_i64().unwrap());
        assert_eq!(code(b"\xff\xfe"), Some(-32700));
        assert_eq!(code(b"{not json"), Some(-32700));
        assert_eq!(code(b"[1,2]"), Some(-32600));
        assert_eq!(code(b"42"), Some(-32600));
        assert_eq!(code(br#"{"id":7,"method":"ping"}"#), Some(-32600));
        assert_eq!(
            check(br#"{"jsonrpc":"1.0","id":"x","method":"ping"}"#).unwrap()["id"],
            "x"
        );
        assert_eq!(code(br#"{"jsonrpc":"2.0","id":1}"#), Some(-32600));
        assert_eq!(code(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#), None);
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            None
        );
        assert_eq!(code(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#), None);
        assert_eq!(code(b"   "), None);
    }
}
