//! The PostgreSQL protocol's framing, both ways: a message is a tag byte and a length (which
//! counts itself) followed by its body; the startup packet has no tag. The door reads whole
//! messages, bounded by the server's row bound ([`crate::run::memory::RunMemory::max_message`]),
//! and writes the few it makes itself (authentication, errors, notices, `ReadyForQuery`).

use std::io;

use bytes::{Buf as _, BufMut as _, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt as _};

/// The most bytes of a startup packet (PostgreSQL's own bound).
pub(super) const MAX_STARTUP: usize = 10_000;

/// The startup packet's codes that are not a protocol version.
pub(super) const SSL_REQUEST: i32 = 80_877_103;
pub(super) const GSSENC_REQUEST: i32 = 80_877_104;
pub(super) const CANCEL_REQUEST: i32 = 80_877_102;
/// Protocol 3.0.
pub(super) const PROTOCOL_3: i32 = 196_608;

/// One message: its tag and its body (without the length).
#[derive(Clone, Debug)]
pub(super) struct Message {
    pub(super) tag: u8,
    pub(super) body: Bytes,
}

impl Message {
    /// The message as it goes on the wire.
    pub(super) fn write_to(&self, out: &mut BytesMut) {
        out.put_u8(self.tag);
        out.put_i32(i32::try_from(self.body.len() + 4).unwrap_or(i32::MAX));
        out.put_slice(&self.body);
    }
}

/// Reads the next message; `None` at a clean end of the stream. A length under 4 or over `max`
/// is refused before the body is read.
pub(super) async fn read_message<R: AsyncRead + Unpin>(
    reader: &mut R,
    max: usize,
) -> io::Result<Option<Message>> {
    let tag = match reader.read_u8().await {
        Ok(tag) => tag,
        Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(error) => return Err(error),
    };
    let length = reader.read_i32().await?;
    let length = usize::try_from(length)
        .ok()
        .filter(|l| *l >= 4)
        .ok_or_else(|| invalid("a message length under 4"))?;
    if length - 4 > max {
        return Err(invalid("a message over the server's bound"));
    }
    let mut body = BytesMut::zeroed(length - 4);
    reader.read_exact(&mut body).await?;
    Ok(Some(Message {
        tag,
        body: body.freeze(),
    }))
}

/// What a relay reads a side's messages through: one buffer, filled by large reads and cut
/// into messages that share it (no allocation or copy per message). Reading is cancel-safe:
/// a read raced by something else and dropped loses nothing.
pub(super) struct Framed<R> {
    reader: R,
    buffer: BytesMut,
    max: usize,
}

/// What a [`Framed`] asks of its reader at least, at each read.
const READ_AHEAD: usize = 64 * 1024;

impl<R: AsyncRead + Unpin> Framed<R> {
    /// Messages of at most `max` bytes from `reader`.
    pub(super) fn new(reader: R, max: usize) -> Self {
        Self {
            reader,
            buffer: BytesMut::with_capacity(READ_AHEAD),
            max,
        }
    }

    /// The next message; `None` at a clean end of the stream (between messages). A length
    /// under 4 or over the bound is refused before its body is read.
    pub(super) async fn next(&mut self) -> io::Result<Option<Message>> {
        loop {
            let wanted = match self.whole()? {
                Ok(message) => return Ok(Some(message)),
                Err(wanted) => wanted,
            };
            self.buffer.reserve(wanted.max(READ_AHEAD));
            if self.reader.read_buf(&mut self.buffer).await? == 0 {
                return if self.buffer.is_empty() {
                    Ok(None)
                } else {
                    Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the stream ended inside a message",
                    ))
                };
            }
        }
    }

    /// Whether bytes already read wait in the buffer (the next message may need no read).
    pub(super) fn buffered(&self) -> bool {
        !self.buffer.is_empty()
    }

    /// The buffer's first message when it is whole, else how many more bytes it needs.
    fn whole(&mut self) -> io::Result<Result<Message, usize>> {
        if self.buffer.len() < 5 {
            return Ok(Err(5 - self.buffer.len()));
        }
        let length = i32::from_be_bytes([
            self.buffer[1],
            self.buffer[2],
            self.buffer[3],
            self.buffer[4],
        ]);
        let length = usize::try_from(length)
            .ok()
            .filter(|l| *l >= 4)
            .ok_or_else(|| invalid("a message length under 4"))?;
        if length - 4 > self.max {
            return Err(invalid("a message over the server's bound"));
        }
        if self.buffer.len() < 1 + length {
            return Ok(Err(1 + length - self.buffer.len()));
        }
        let mut frame = self.buffer.split_to(1 + length);
        let tag = frame[0];
        frame.advance(5);
        Ok(Ok(Message {
            tag,
            body: frame.freeze(),
        }))
    }
}

/// Reads a startup packet: its code and what follows it.
pub(super) async fn read_startup<R: AsyncRead + Unpin>(reader: &mut R) -> io::Result<(i32, Bytes)> {
    let length = reader.read_i32().await?;
    let length = usize::try_from(length)
        .ok()
        .filter(|l| (8..=MAX_STARTUP).contains(l))
        .ok_or_else(|| invalid("a startup packet of an impossible length"))?;
    let code = reader.read_i32().await?;
    let mut body = BytesMut::zeroed(length - 8);
    reader.read_exact(&mut body).await?;
    Ok((code, body.freeze()))
}

pub(super) fn invalid(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why.to_owned())
}

/// A startup message's parameters (`name\0value\0…\0`).
pub(super) fn startup_parameters(mut body: Bytes) -> io::Result<Vec<(String, String)>> {
    let mut parameters = Vec::new();
    loop {
        let name = cstr(&mut body)?;
        if name.is_empty() {
            return Ok(parameters);
        }
        let value = cstr(&mut body)?;
        parameters.push((name, value));
    }
}

/// The next NUL-terminated string of `body`, as UTF-8.
pub(super) fn cstr(body: &mut Bytes) -> io::Result<String> {
    let end = body
        .iter()
        .position(|b| *b == 0)
        .ok_or_else(|| invalid("a string without its end"))?;
    let text = body.split_to(end);
    body.advance(1);
    String::from_utf8(text.to_vec()).map_err(|_| invalid("a string that is not UTF-8"))
}

/// Builds a message of `tag` from its body.
pub(super) fn message(tag: u8, body: impl FnOnce(&mut BytesMut)) -> Message {
    let mut out = BytesMut::new();
    body(&mut out);
    Message {
        tag,
        body: out.freeze(),
    }
}

fn put_cstr(out: &mut BytesMut, text: &str) {
    // A NUL inside would end the field early: it is never sent.
    out.put_slice(text.replace('\0', "").as_bytes());
    out.put_u8(0);
}

/// `AuthenticationOk` (0) or `AuthenticationCleartextPassword` (3).
pub(super) fn authentication(code: i32) -> Message {
    message(b'R', |out| out.put_i32(code))
}

/// `ParameterStatus`.
pub(super) fn parameter_status(name: &str, value: &str) -> Message {
    message(b'S', |out| {
        put_cstr(out, name);
        put_cstr(out, value);
    })
}

/// `BackendKeyData`.
pub(super) fn backend_key_data(process: i32, secret: i32) -> Message {
    message(b'K', |out| {
        out.put_i32(process);
        out.put_i32(secret);
    })
}

/// `ReadyForQuery` with the transaction status (`I`, `T` or `E`).
pub(super) fn ready_for_query(status: u8) -> Message {
    message(b'Z', |out| out.put_u8(status))
}

/// `CommandComplete` with its tag.
pub(super) fn command_complete(tag: &str) -> Message {
    message(b'C', |out| put_cstr(out, tag))
}

/// An error or a notice: its fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Report {
    /// `ERROR`, `FATAL`, `WARNING`, `NOTICE`.
    pub(super) severity: &'static str,
    /// The SQLSTATE.
    pub(super) code: &'static str,
    /// What happened.
    pub(super) message: String,
    /// What to do.
    pub(super) hint: Option<String>,
}

impl Report {
    /// An `ERROR` with `code`.
    pub(super) fn error(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            severity: "ERROR",
            code,
            message: message.into(),
            hint: None,
        }
    }

    /// A `FATAL` with `code`: the connection ends after it.
    pub(super) fn fatal(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            severity: "FATAL",
            ..Self::error(code, message)
        }
    }

    /// With a hint.
    #[must_use]
    pub(super) fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// The `ErrorResponse` (`E`) or, for a `WARNING` or `NOTICE`, the `NoticeResponse` (`N`).
    pub(super) fn message(&self) -> Message {
        let tag = if matches!(self.severity, "ERROR" | "FATAL") {
            b'E'
        } else {
            b'N'
        };
        message(tag, |out| {
            for (field, value) in [
                (b'S', self.severity),
                (b'V', self.severity),
                (b'C', self.code),
            ] {
                out.put_u8(field);
                put_cstr(out, value);
            }
            out.put_u8(b'M');
            put_cstr(out, &self.message);
            if let Some(hint) = &self.hint {
                out.put_u8(b'H');
                put_cstr(out, hint);
            }
            out.put_u8(0);
        })
    }
}

/// The fields of an `ErrorResponse` or `NoticeResponse` body, by their code.
pub(super) fn fields(body: &Bytes) -> Vec<(u8, String)> {
    let mut body = body.clone();
    let mut fields = Vec::new();
    while let Some(&code) = body.first() {
        if code == 0 {
            break;
        }
        body.advance(1);
        match cstr(&mut body) {
            Ok(value) => fields.push((code, value)),
            Err(_) => break,
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_message_round_trips_and_an_oversized_one_is_refused() {
        let report = Report::error("42501", "no\0pe").hint("ask");
        let mut wire = BytesMut::new();
        report.message().write_to(&mut wire);
        let read = read_message(&mut &wire[..], 1024).await.unwrap().unwrap();
        assert_eq!(read.tag, b'E');
        let fields = fields(&read.body);
        assert!(fields.contains(&(b'C', "42501".to_owned())));
        assert!(fields.contains(&(b'M', "nope".to_owned())), "{fields:?}");
        assert!(fields.contains(&(b'H', "ask".to_owned())));
        let error = read_message(&mut &wire[..], 4).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        assert!(read_message(&mut &[][..], 4).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn framed_messages_come_whole_from_any_cut_of_the_stream() {
        let mut wire = BytesMut::new();
        for i in 0..50u8 {
            message(b'D', |out| out.put_slice(&vec![i; usize::from(i) * 7])).write_to(&mut wire);
        }
        // Cut into reads of 3 bytes: every message still comes whole and in order.
        let mut framed = Framed::new(Trickle(&wire[..]), 1024);
        for i in 0..50u8 {
            let message = framed.next().await.unwrap().unwrap();
            assert_eq!(message.tag, b'D');
            assert_eq!(&message.body[..], &vec![i; usize::from(i) * 7][..]);
        }
        assert!(framed.next().await.unwrap().is_none());
        // A stream cut inside a message is an error, a length over the bound refused.
        let mut cut = Framed::new(&wire[..7], 1024);
        assert!(cut.next().await.unwrap().unwrap().body.is_empty());
        assert_eq!(
            cut.next().await.unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
        let mut small = Framed::new(&wire[..], 100);
        for _ in 0..15 {
            small.next().await.unwrap().unwrap();
        }
        assert_eq!(
            small.next().await.unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
    }

    /// A reader that gives at most 3 bytes a read.
    struct Trickle<'a>(&'a [u8]);

    impl AsyncRead for Trickle<'_> {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<io::Result<()>> {
            let n = self.0.len().min(3).min(buf.remaining());
            buf.put_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            std::task::Poll::Ready(Ok(()))
        }
    }

    #[test]
    fn startup_parameters_are_read_to_their_end() {
        let body = Bytes::from_static(b"user\0ann\0database\0db_1:reader\0\0");
        assert_eq!(
            startup_parameters(body).unwrap(),
            vec![
                ("user".to_owned(), "ann".to_owned()),
                ("database".to_owned(), "db_1:reader".to_owned())
            ]
        );
        assert!(startup_parameters(Bytes::from_static(b"user\0ann")).is_err());
    }
}
