//! A small TDS stand-in for SQL Server: it answers PRELOGIN (no encryption offered:
//! `ENCRYPT_NOT_SUP`), checks the LOGIN7 user, password and database and answers as SQL Server
//! does (LOGINACK; ERROR 18456 "Login failed for user"; ERROR 4060 "Cannot open database"),
//! then answers every SQL batch with DONE, but a batch holding `WAITFOR`, which it never
//! answers: it counts it in [`WAITFOR_RECEIVED`], waits for the client to close the
//! connection, and counts that in [`CLOSED_WHILE_WAITING`].

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};

/// How many clients closed their connection while the stand-in held a `WAITFOR` batch.
pub(crate) static CLOSED_WHILE_WAITING: AtomicUsize = AtomicUsize::new(0);

/// How many `WAITFOR` batches the stand-in received (each held until its client goes).
pub(crate) static WAITFOR_RECEIVED: AtomicUsize = AtomicUsize::new(0);

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::PASSWORD;

/// The login the stand-in accepts (with [`PASSWORD`]).
pub(crate) const USER: &str = "checker";
/// The database the stand-in knows.
pub(crate) const DATABASE: &str = "checkdb";

/// Starts the stand-in; its address.
pub(crate) async fn mock_sql_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let _ = serve(socket).await;
            });
        }
    });
    addr
}

/// Reads one TDS message (packets until end-of-message): its type and payload.
async fn read_message(socket: &mut TcpStream) -> std::io::Result<(u8, Vec<u8>)> {
    let mut payload = Vec::new();
    loop {
        let mut header = [0u8; 8];
        socket.read_exact(&mut header).await?;
        let length = usize::from(u16::from_be_bytes([header[2], header[3]]));
        let mut body = vec![0u8; length.saturating_sub(8)];
        socket.read_exact(&mut body).await?;
        payload.extend_from_slice(&body);
        if header[1] & 0x01 != 0 {
            return Ok((header[0], payload));
        }
    }
}

/// Sends one tabular-result message (type 0x04) in one packet.
async fn send_reply(socket: &mut TcpStream, payload: &[u8]) -> std::io::Result<()> {
    let length = u16::try_from(payload.len() + 8).expect("small reply");
    let mut packet = vec![0x04, 0x01];
    packet.extend_from_slice(&length.to_be_bytes());
    packet.extend_from_slice(&[0, 0, 1, 0]);
    packet.extend_from_slice(payload);
    socket.write_all(&packet).await
}

fn utf16(text: &str) -> Vec<u8> {
    text.encode_utf16().flat_map(u16::to_le_bytes).collect()
}

fn b_varchar(text: &str) -> Vec<u8> {
    let mut out = vec![u8::try_from(text.encode_utf16().count()).expect("short")];
    out.extend(utf16(text));
    out
}

fn us_varchar(text: &str) -> Vec<u8> {
    let count = u16::try_from(text.encode_utf16().count()).expect("short");
    let mut out = count.to_le_bytes().to_vec();
    out.extend(utf16(text));
    out
}

/// A token with a 2-byte length before its body.
fn token(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![kind];
    out.extend_from_slice(&u16::try_from(body.len()).expect("short").to_le_bytes());
    out.extend_from_slice(body);
    out
}

fn done(status: u16) -> Vec<u8> {
    let mut out = vec![0xFD];
    out.extend_from_slice(&status.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&0u64.to_le_bytes());
    out
}

fn error(number: u32, state: u8, class: u8, message: &str) -> Vec<u8> {
    let mut body = number.to_le_bytes().to_vec();
    body.push(state);
    body.push(class);
    body.extend(us_varchar(message));
    body.extend(b_varchar("mockmssql"));
    body.extend(b_varchar(""));
    body.extend_from_slice(&1u32.to_le_bytes());
    token(0xAA, &body)
}

fn login_ack() -> Vec<u8> {
    let mut body = vec![1];
    body.extend_from_slice(&0x7400_0004u32.to_be_bytes()); // TDS 7.4
    body.extend(b_varchar("Microsoft SQL Server"));
    body.extend_from_slice(&[16, 0, 0x10, 0x00]);
    token(0xAD, &body)
}

/// A LOGIN7 field (offset and length in characters at `at`), decoded from UTF-16.
fn login_field(login: &[u8], at: usize, password: bool) -> String {
    let offset = usize::from(u16::from_le_bytes([login[at], login[at + 1]]));
    let chars = usize::from(u16::from_le_bytes([login[at + 2], login[at + 3]]));
    let bytes: Vec<u8> = login[offset..offset + 2 * chars]
        .iter()
        .map(|&b| {
            if password {
                // Clients swap the nibbles and XOR with 0xA5; undo it.
                let b = b ^ 0xA5;
                b.rotate_left(4)
            } else {
                b
            }
        })
        .collect();
    let units: Vec<u16> = bytes
        .chunks(2)
        .map(|pair| u16::from_le_bytes([pair[0], pair[1]]))
        .collect();
    String::from_utf16_lossy(&units)
}

async fn serve(mut socket: TcpStream) -> std::io::Result<()> {
    // PRELOGIN: answer VERSION and ENCRYPTION = ENCRYPT_NOT_SUP (2).
    let (kind, _) = read_message(&mut socket).await?;
    assert_eq!(kind, 0x12, "expected PRELOGIN");
    let mut prelogin = vec![
        0x00, 0x00, 0x0B, 0x00, 0x06, 0x01, 0x00, 0x11, 0x00, 0x01, 0xFF,
    ];
    prelogin.extend_from_slice(&[16, 0, 0x10, 0x00, 0, 0]);
    prelogin.push(0x02);
    send_reply(&mut socket, &prelogin).await?;

    // LOGIN7.
    let (kind, login) = read_message(&mut socket).await?;
    assert_eq!(kind, 0x10, "expected LOGIN7");
    let user = login_field(&login, 40, false);
    let password = login_field(&login, 44, true);
    let database = login_field(&login, 68, false);
    let mut reply = Vec::new();
    if user != USER || password != PASSWORD {
        reply.extend(error(
            18456,
            1,
            14,
            &format!("Login failed for user '{user}'."),
        ));
        reply.extend(done(0x0002));
        return send_reply(&mut socket, &reply).await;
    }
    if database != DATABASE {
        reply.extend(error(
            4060,
            1,
            11,
            &format!(
                "Cannot open database \"{database}\" requested by the login. The login failed."
            ),
        ));
        reply.extend(done(0x0002));
        return send_reply(&mut socket, &reply).await;
    }
    reply.extend(login_ack());
    reply.extend(done(0));
    send_reply(&mut socket, &reply).await?;

    // Every SQL batch: DONE; a WAITFOR: no answer until the client goes away.
    let waitfor = utf16("WAITFOR");
    loop {
        let (_, batch) = read_message(&mut socket).await?;
        if batch
            .windows(waitfor.len())
            .any(|w| w == waitfor.as_slice())
        {
            WAITFOR_RECEIVED.fetch_add(1, Ordering::SeqCst);
            let mut rest = [0u8; 512];
            while socket.read(&mut rest).await.unwrap_or(0) > 0 {}
            CLOSED_WHILE_WAITING.fetch_add(1, Ordering::SeqCst);
            return Ok(());
        }
        send_reply(&mut socket, &done(0)).await?;
    }
}
