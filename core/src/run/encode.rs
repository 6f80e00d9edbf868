//! Results as they are written: JSON, NDJSON or CSV, cell by cell straight into the output
//! buffer (no `serde_json::Value` per row), so a result streams at the speed its driver decodes.
//!
//! Values keep their types (docs/queries.md, "Results"): integers beyond ±2^53 and decimals are JSON
//! strings (no JavaScript client loses digits), timestamps ISO 8601, bytes base64 (their column
//! says `"encoding": "base64"`), JSON as JSON, NULL as `null` (an empty field in CSV).

use base64::Engine as _;
use bytes::{BufMut as _, BytesMut};

/// The largest integer a JSON number keeps exactly in every client (2^53).
const EXACT_JSON_INTEGER: u64 = 1 << 53;

/// How a result is written, chosen by the request's `Accept`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `application/json` (the default): one object, written progressively.
    Json,
    /// `application/x-ndjson`: the columns, one line per row, then the summary.
    Ndjson,
    /// `text/csv`: a header line, then one line per row.
    Csv,
}

impl Format {
    /// The format an `Accept` header asks for: CSV or NDJSON when named, JSON otherwise.
    pub fn from_accept(accept: Option<&str>) -> Self {
        let Some(accept) = accept else {
            return Format::Json;
        };
        let named = |media: &str| {
            accept.split(',').any(|part| {
                part.split(';')
                    .next()
                    .is_some_and(|m| m.trim().eq_ignore_ascii_case(media))
            })
        };
        if named("text/csv") {
            Format::Csv
        } else if named("application/x-ndjson") || named("application/ndjson") {
            Format::Ndjson
        } else {
            Format::Json
        }
    }

    /// The response's content type.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Json => "application/json",
            Format::Ndjson => "application/x-ndjson",
            Format::Csv => "text/csv; charset=utf-8",
        }
    }
}

/// A result column: its name and the database's name of its type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// The column's name.
    pub name: String,
    /// The database's type name (`int8`, `varchar`, `DateTime64(3)`…).
    pub type_name: String,
    /// Whether its values are bytes, written in base64.
    pub base64: bool,
}

/// How a result ended, written after its rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summary {
    /// Rows written.
    pub row_count: u64,
    /// Whether more rows existed than the cap let through.
    pub truncated: bool,
    /// How long the run took, in milliseconds.
    pub duration_ms: u64,
    /// Why it failed after its first rows, when it did.
    pub error: Option<String>,
    /// The rows a write changed, as the database counted them (`None`: it said nothing, or it
    /// returned rows).
    pub affected_rows: Option<u64>,
}

/// The most bytes one value, and one row, of a result may hold (docs/queries.md, "Limits and
/// cancel"): a result with a bigger one is refused rather than copied into the answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValueLimits {
    /// The most bytes of one value (text, bytes, JSON) as the database sent it.
    pub max_value: usize,
    /// The most bytes of one row's values together.
    pub max_row: usize,
    /// The most bytes the large rows of all runs together may hold at once
    /// ([`super::memory`]): a run whose next row does not fit waits for room.
    pub max_in_flight: usize,
}

impl Default for ValueLimits {
    /// 32 MiB a value, 64 MiB a row, 2 GiB for all runs' large rows together.
    fn default() -> Self {
        Self {
            max_value: 32 * 1024 * 1024,
            max_row: 64 * 1024 * 1024,
            max_in_flight: 2 * 1024 * 1024 * 1024,
        }
    }
}

/// Why a row is refused: over `bound` bytes a row (its `size` when known). One wording for the
/// encoder and for the drivers that refuse a row before reading it.
pub fn row_over_bound(size: Option<usize>, bound: usize) -> String {
    let size = size.map_or_else(String::new, |size| format!("{size} bytes, "));
    format!(
        "a row of the result is {size}over this server's bound of {bound} bytes a row: select \
         fewer or smaller columns (left(column, n), substring…)"
    )
}

/// Makes each row's token from the row as it was encoded (a dashboard panel's row tokens,
/// docs/workflows.md, "Row tokens"): JSON carries them in a `row_tokens` array after `rows`,
/// NDJSON in a `{"row_token": …}` line after each row, CSV never.
pub trait RowStamp: Send + Sync + std::fmt::Debug {
    /// The token of a row whose columns are `columns` and whose values, read back from what
    /// was written, are `row`; `None` (a `null` token) when none can be made.
    fn stamp(&self, columns: &[String], row: &[serde_json::Value]) -> Option<String>;
}

/// A [`RowStamp`] at work: the columns' names, and the tokens of a JSON result until its end.
#[derive(Debug)]
struct Stamping {
    stamp: std::sync::Arc<dyn RowStamp>,
    columns: Vec<String>,
    tokens: Vec<Option<String>>,
}

/// Writes one result in one [`Format`] into a buffer.
#[derive(Debug)]
pub struct Encoder {
    format: Format,
    buffer: BytesMut,
    /// Whether the next cell is the first of its row.
    first_cell: bool,
    /// Whether a row was written (JSON needs a comma before the next).
    any_row: bool,
    limits: ValueLimits,
    /// Where the current row begins in the buffer, and whether a row came before it.
    row_start: (usize, bool),
    /// The bytes of the current row's values so far.
    row_bytes: usize,
    /// What went over a bound, once something did.
    oversized: Option<String>,
    /// The row tokens to write, when asked for.
    stamping: Option<Stamping>,
    /// The rows as values instead of bytes, for a run the service reads itself
    /// ([`Encoder::collecting`]).
    values: Option<Box<Values>>,
}

/// A result kept as values: its columns, its rows, and the row being written.
#[derive(Debug, Default)]
pub struct Values {
    /// The columns.
    pub columns: Vec<Column>,
    /// The rows, each a value per column, typed as the JSON result types them.
    pub rows: Vec<Vec<serde_json::Value>>,
    /// The row being written.
    row: Vec<serde_json::Value>,
}

impl Encoder {
    /// An encoder with an empty buffer, with the default [`ValueLimits`].
    pub fn new(format: Format) -> Self {
        Self::with_limits(format, ValueLimits::default())
    }

    /// An encoder with an empty buffer, refusing values and rows over `limits`.
    pub fn with_limits(format: Format, limits: ValueLimits) -> Self {
        Self {
            format,
            buffer: BytesMut::with_capacity(64 * 1024),
            first_cell: true,
            any_row: false,
            limits,
            row_start: (0, false),
            row_bytes: 0,
            oversized: None,
            stamping: None,
            values: None,
        }
    }

    /// An encoder that keeps the result as values ([`Encoder::take_values`]) rather than
    /// writing bytes, typed as the JSON result types them: for the service's own statements (a
    /// catalog read, a role check), whose rows it reads itself.
    pub fn collecting(limits: ValueLimits) -> Self {
        let mut encoder = Self::with_limits(Format::Json, limits);
        encoder.buffer = BytesMut::new();
        encoder.values = Some(Box::default());
        encoder
    }

    /// The result kept so far by a [`Encoder::collecting`] encoder (`None` for another).
    pub fn take_values(&mut self) -> Option<Values> {
        self.values.take().map(|values| *values)
    }

    /// Keeps `value` as the next cell, when the encoder collects values: then nothing is
    /// written.
    fn kept(&mut self, value: impl FnOnce() -> serde_json::Value) -> bool {
        match &mut self.values {
            Some(values) => {
                values.row.push(value());
                true
            }
            None => false,
        }
    }

    /// From now on, each row gets a token from `stamp` (JSON and NDJSON; CSV carries none).
    pub fn stamp_rows(&mut self, stamp: std::sync::Arc<dyn RowStamp>) {
        if self.format != Format::Csv {
            self.stamping = Some(Stamping {
                stamp,
                columns: Vec::new(),
                tokens: Vec::new(),
            });
        }
    }

    /// Takes back the row begun last, written or not: the result ends before it.
    pub fn abandon_row(&mut self) {
        if let Some(values) = &mut self.values {
            values.row.clear();
        }
        let (start, any_row) = self.row_start;
        self.buffer.truncate(start.min(self.buffer.len()));
        self.any_row = any_row;
        self.first_cell = true;
    }

    /// What went over a bound of [`ValueLimits`], if anything did: the result is then refused.
    pub fn oversized(&self) -> Option<&str> {
        self.oversized.as_deref()
    }

    /// Whether a value of `len` bytes may be written: counts it against the row's bound, and
    /// notes the first bound it goes over (nothing of it is copied then).
    fn admits(&mut self, len: usize) -> bool {
        self.row_bytes = self.row_bytes.saturating_add(len);
        if self.oversized.is_some() {
            return false;
        }
        if len > self.limits.max_value {
            self.oversized = Some(format!(
                "a value of the result is {len} bytes, over this server's bound of {} bytes a \
                 value: select less of it (left(column, n), substring…)",
                self.limits.max_value
            ));
            return false;
        }
        if self.row_bytes > self.limits.max_row {
            self.oversized = Some(row_over_bound(None, self.limits.max_row));
            return false;
        }
        true
    }

    /// The format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// How many bytes wait in the buffer.
    pub fn buffered(&self) -> usize {
        self.buffer.len()
    }

    /// Takes what was written so far.
    pub fn take(&mut self) -> bytes::Bytes {
        self.buffer.split().freeze()
    }

    /// Writes the head of the result: the columns.
    pub fn columns(&mut self, columns: &[Column]) {
        if let Some(values) = &mut self.values {
            values.columns = columns.to_vec();
            return;
        }
        if let Some(stamping) = &mut self.stamping {
            stamping.columns = columns.iter().map(|c| c.name.clone()).collect();
        }
        match self.format {
            Format::Json | Format::Ndjson => {
                self.buffer.put_slice(b"{\"columns\":[");
                for (i, column) in columns.iter().enumerate() {
                    if i > 0 {
                        self.buffer.put_u8(b',');
                    }
                    self.buffer.put_slice(b"{\"name\":");
                    json_string(&mut self.buffer, &column.name);
                    self.buffer.put_slice(b",\"type\":");
                    json_string(&mut self.buffer, &column.type_name);
                    if column.base64 {
                        self.buffer.put_slice(b",\"encoding\":\"base64\"");
                    }
                    self.buffer.put_u8(b'}');
                }
                if self.format == Format::Json {
                    self.buffer.put_slice(b"],\"rows\":[");
                } else {
                    self.buffer.put_slice(b"]}\n");
                }
            }
            Format::Csv => {
                for (i, column) in columns.iter().enumerate() {
                    if i > 0 {
                        self.buffer.put_u8(b',');
                    }
                    csv_field(&mut self.buffer, &column.name);
                }
                self.buffer.put_slice(b"\r\n");
            }
        }
    }

    /// Starts a row.
    pub fn begin_row(&mut self) {
        self.first_cell = true;
        self.row_bytes = 0;
        self.row_start = (self.buffer.len(), self.any_row);
        if let Some(values) = &mut self.values {
            values.row.clear();
            self.any_row = true;
            return;
        }
        match self.format {
            Format::Json => {
                if self.any_row {
                    self.buffer.put_u8(b',');
                }
                self.buffer.put_u8(b'[');
            }
            Format::Ndjson => self.buffer.put_u8(b'['),
            Format::Csv => {}
        }
        self.any_row = true;
    }

    /// Ends a row.
    pub fn end_row(&mut self) {
        if let Some(values) = &mut self.values {
            let row = std::mem::take(&mut values.row);
            values.rows.push(row);
            return;
        }
        match self.format {
            Format::Json => self.buffer.put_u8(b']'),
            Format::Ndjson => self.buffer.put_slice(b"]\n"),
            Format::Csv => self.buffer.put_slice(b"\r\n"),
        }
        if let Some(stamping) = &mut self.stamping {
            let (start, _) = self.row_start;
            let written = &self.buffer[start.min(self.buffer.len())..];
            // The row as the client reads it: what was written, read back (a JSON row starts
            // with the comma after the row before it).
            let written = written.strip_prefix(b",").unwrap_or(written);
            let token = serde_json::from_slice::<Vec<serde_json::Value>>(written)
                .ok()
                .and_then(|row| stamping.stamp.stamp(&stamping.columns, &row));
            match self.format {
                Format::Ndjson => {
                    self.buffer.put_slice(b"{\"row_token\":");
                    put_token(&mut self.buffer, token.as_deref());
                    self.buffer.put_slice(b"}\n");
                }
                _ => stamping.tokens.push(token),
            }
        }
    }

    fn separator(&mut self) {
        if !self.first_cell {
            self.buffer.put_u8(b',');
        }
        self.first_cell = false;
    }

    /// A NULL.
    pub fn null(&mut self) {
        if self.kept(|| serde_json::Value::Null) {
            return;
        }
        self.separator();
        if self.format != Format::Csv {
            self.buffer.put_slice(b"null");
        }
    }

    /// A boolean.
    pub fn bool(&mut self, value: bool) {
        if self.kept(|| serde_json::Value::Bool(value)) {
            return;
        }
        self.separator();
        self.buffer
            .put_slice(if value { b"true" } else { b"false" });
    }

    /// A signed integer: a JSON string beyond ±2^53.
    pub fn int(&mut self, value: i64) {
        if self.kept(|| {
            if value.unsigned_abs() > EXACT_JSON_INTEGER {
                serde_json::Value::String(value.to_string())
            } else {
                serde_json::Value::from(value)
            }
        }) {
            return;
        }
        self.separator();
        let mut digits = itoa::Buffer::new();
        let text = digits.format(value);
        if self.format != Format::Csv && value.unsigned_abs() > EXACT_JSON_INTEGER {
            self.buffer.put_u8(b'"');
            self.buffer.put_slice(text.as_bytes());
            self.buffer.put_u8(b'"');
        } else {
            self.buffer.put_slice(text.as_bytes());
        }
    }

    /// An unsigned integer: a JSON string beyond 2^53.
    pub fn uint(&mut self, value: u64) {
        if self.kept(|| {
            if value > EXACT_JSON_INTEGER {
                serde_json::Value::String(value.to_string())
            } else {
                serde_json::Value::from(value)
            }
        }) {
            return;
        }
        self.separator();
        let mut digits = itoa::Buffer::new();
        let text = digits.format(value);
        if self.format != Format::Csv && value > EXACT_JSON_INTEGER {
            self.buffer.put_u8(b'"');
            self.buffer.put_slice(text.as_bytes());
            self.buffer.put_u8(b'"');
        } else {
            self.buffer.put_slice(text.as_bytes());
        }
    }

    /// A float: `NaN` and the infinities are strings in JSON.
    pub fn float(&mut self, value: f64) {
        if value.is_finite() {
            if self.kept(|| serde_json::Value::from(value)) {
                return;
            }
            self.separator();
            let mut digits = ryu::Buffer::new();
            self.buffer
                .put_slice(digits.format_finite(value).as_bytes());
        } else if value.is_nan() {
            self.text("NaN");
        } else if value > 0.0 {
            self.text("Infinity");
        } else {
            self.text("-Infinity");
        }
    }

    /// Text.
    pub fn text(&mut self, value: &str) {
        if !self.admits(value.len()) {
            return self.null();
        }
        if self.kept(|| serde_json::Value::String(value.to_owned())) {
            return;
        }
        self.separator();
        match self.format {
            Format::Csv => csv_field(&mut self.buffer, value),
            _ => json_string(&mut self.buffer, value),
        }
    }

    /// A number that JSON can't hold exactly (a decimal, a 128-bit integer): a JSON string, a
    /// plain CSV field.
    pub fn number_text(&mut self, value: &str) {
        self.text(value);
    }

    /// Bytes, in base64.
    pub fn bytes(&mut self, value: &[u8]) {
        if !self.admits(value.len()) {
            return self.null();
        }
        if self.kept(|| {
            serde_json::Value::String(base64::engine::general_purpose::STANDARD.encode(value))
        }) {
            return;
        }
        self.separator();
        let quoted = self.format != Format::Csv;
        if quoted {
            self.buffer.put_u8(b'"');
        }
        let start = self.buffer.len();
        let size = base64::encoded_len(value.len(), true).unwrap_or(0);
        self.buffer.resize(start + size, 0);
        let written = base64::engine::general_purpose::STANDARD
            .encode_slice(value, &mut self.buffer[start..])
            .unwrap_or(0);
        self.buffer.truncate(start + written);
        if quoted {
            self.buffer.put_u8(b'"');
        }
    }

    /// A JSON document the database holds (already valid JSON): as it is in JSON, as text in
    /// CSV.
    pub fn json(&mut self, raw: &str) {
        match self.format {
            Format::Csv => self.text(raw),
            _ => {
                if !self.admits(raw.len()) {
                    return self.null();
                }
                // Kept as the document it is (as text when it does not read back).
                if self.kept(|| {
                    serde_json::from_str(raw)
                        .unwrap_or_else(|_| serde_json::Value::String(raw.to_owned()))
                }) {
                    return;
                }
                self.separator();
                // A line break in valid JSON is whitespace (a string can't hold one): it
                // becomes a space, so that an NDJSON row stays one line (PostgreSQL's
                // EXPLAIN (FORMAT JSON) is pretty-printed).
                if raw.bytes().any(|b| b == b'\n' || b == b'\r') {
                    self.buffer.extend(
                        raw.bytes()
                            .map(|b| if b == b'\n' || b == b'\r' { b' ' } else { b }),
                    );
                } else {
                    self.buffer.put_slice(raw.as_bytes());
                }
            }
        }
    }

    /// Writes the end of the result: its summary (JSON, NDJSON); nothing for CSV.
    pub fn finish(&mut self, summary: &Summary) {
        if self.values.is_some() {
            return;
        }
        let tail = |buffer: &mut BytesMut| {
            if let Some(error) = &summary.error {
                buffer.put_slice(b"\"error\":{\"detail\":");
                json_string(buffer, error);
                buffer.put_slice(b"},");
            }
            buffer.put_slice(b"\"row_count\":");
            buffer.put_slice(itoa::Buffer::new().format(summary.row_count).as_bytes());
            buffer.put_slice(b",\"truncated\":");
            buffer.put_slice(if summary.truncated { b"true" } else { b"false" });
            buffer.put_slice(b",\"duration_ms\":");
            buffer.put_slice(itoa::Buffer::new().format(summary.duration_ms).as_bytes());
            if let Some(affected) = summary.affected_rows {
                buffer.put_slice(b",\"affected_rows\":");
                buffer.put_slice(itoa::Buffer::new().format(affected).as_bytes());
            }
            buffer.put_u8(b'}');
        };
        match self.format {
            Format::Json => {
                self.buffer.put_slice(b"],");
                if let Some(stamping) = &mut self.stamping {
                    self.buffer.put_slice(b"\"row_tokens\":[");
                    for (i, token) in stamping.tokens.drain(..).enumerate() {
                        if i > 0 {
                            self.buffer.put_u8(b',');
                        }
                        put_token(&mut self.buffer, token.as_deref());
                    }
                    self.buffer.put_slice(b"],");
                }
                tail(&mut self.buffer);
            }
            Format::Ndjson => {
                self.buffer.put_u8(b'{');
                tail(&mut self.buffer);
                self.buffer.put_u8(b'\n');
            }
            Format::Csv => {}
        }
    }
}

/// A row token, or `null`.
fn put_token(buffer: &mut BytesMut, token: Option<&str>) {
    match token {
        Some(token) => json_string(buffer, token),
        None => buffer.put_slice(b"null"),
    }
}

/// `text` as a JSON string.
pub(crate) fn json_string(buffer: &mut BytesMut, text: &str) {
    // JSON's rules (RFC 8259, as serde_json writes them): `"` and `\` escaped, control
    // characters as their short escape or `\u00XX`, everything else copied. Runs between
    // escapes are copied whole: a long value costs one scan and one copy.
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = text.as_bytes();
    buffer.reserve(bytes.len() + 2);
    buffer.put_u8(b'"');
    let mut start = 0;
    let mut at = 0;
    while at < bytes.len() {
        // Eight bytes at a time while none needs escaping.
        if let Some(word) = bytes.get(at..at + 8) {
            let word = u64::from_le_bytes([
                word[0], word[1], word[2], word[3], word[4], word[5], word[6], word[7],
            ]);
            if !needs_escape(word) {
                at += 8;
                continue;
            }
        }
        let byte = bytes[at];
        if byte >= 0x20 && byte != b'"' && byte != b'\\' {
            at += 1;
            continue;
        }
        buffer.put_slice(&bytes[start..at]);
        match byte {
            b'"' => buffer.put_slice(b"\\\""),
            b'\\' => buffer.put_slice(b"\\\\"),
            b'\n' => buffer.put_slice(b"\\n"),
            b'\r' => buffer.put_slice(b"\\r"),
            b'\t' => buffer.put_slice(b"\\t"),
            0x08 => buffer.put_slice(b"\\b"),
            0x0c => buffer.put_slice(b"\\f"),
            _ => buffer.put_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0xf)],
            ]),
        }
        at += 1;
        start = at;
    }
    buffer.put_slice(&bytes[start..]);
    buffer.put_u8(b'"');
}

/// Whether any of the eight bytes of `word` is a control character, `"` or `\\`.
fn needs_escape(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let has_zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS != 0;
    // A byte under 0x20: subtracting 0x20 borrows into its high bit (bytes with the high bit
    // already set, UTF-8's, are excluded by `!word`).
    let below_space = word.wrapping_sub(ONES * 0x20) & !word & HIGHS != 0;
    below_space
        || has_zero(word ^ (ONES * u64::from(b'"')))
        || has_zero(word ^ (ONES * u64::from(b'\\')))
}

/// `text` as a CSV field (RFC 4180): quoted when it holds a comma, a quote, a line break or
/// leading or trailing space, with quotes doubled.
fn csv_field(buffer: &mut BytesMut, text: &str) {
    let needs_quotes = text
        .bytes()
        .any(|b| matches!(b, b',' | b'"' | b'\n' | b'\r'))
        || text.starts_with(' ')
        || text.ends_with(' ');
    if !needs_quotes {
        buffer.put_slice(text.as_bytes());
        return;
    }
    buffer.put_u8(b'"');
    for (i, part) in text.split('"').enumerate() {
        if i > 0 {
            buffer.put_slice(b"\"\"");
        }
        buffer.put_slice(part.as_bytes());
    }
    buffer.put_u8(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The escaper writes exactly what serde_json writes, for any text.
        #[test]
        fn json_strings_are_serde_jsons(text in "(?s).{0,64}|[\\x00-\\x7f]{0,64}") {
            let mut buffer = BytesMut::new();
            json_string(&mut buffer, &text);
            proptest::prop_assert_eq!(
                std::str::from_utf8(&buffer).unwrap(),
                serde_json::to_string(&text).unwrap()
            );
        }
    }

    fn columns() -> Vec<Column> {
        vec![
            Column {
                name: "n".to_owned(),
                type_name: "int8".to_owned(),
                base64: false,
            },
            Column {
                name: "b,\"x\"".to_owned(),
                type_name: "bytea".to_owned(),
                base64: true,
            },
        ]
    }

    fn write(format: Format, error: Option<&str>) -> String {
        write_stamped(format, error, None)
    }

    /// Stamps each row with its columns and values, as JSON text.
    #[derive(Debug)]
    struct Echo;

    impl RowStamp for Echo {
        fn stamp(&self, columns: &[String], row: &[serde_json::Value]) -> Option<String> {
            Some(serde_json::json!([columns, row]).to_string())
        }
    }

    fn write_stamped(
        format: Format,
        error: Option<&str>,
        stamp: Option<std::sync::Arc<dyn RowStamp>>,
    ) -> String {
        let mut encoder = Encoder::new(format);
        if let Some(stamp) = stamp {
            encoder.stamp_rows(stamp);
        }
        encoder.columns(&columns());
        for (n, b) in [(1_i64, &b"\x00\xff"[..]), (i64::MAX, b"")] {
            encoder.begin_row();
            encoder.int(n);
            encoder.bytes(b);
            encoder.end_row();
        }
        encoder.begin_row();
        encoder.null();
        encoder.text("a,\"b\"\nc");
        encoder.end_row();
        encoder.finish(&Summary {
            row_count: 3,
            truncated: true,
            duration_ms: 7,
            error: error.map(str::to_owned),
            affected_rows: None,
        });
        String::from_utf8(encoder.take().to_vec()).unwrap()
    }

    #[test]
    fn json_keeps_types_and_ends_with_the_summary() {
        let text = write(Format::Json, None);
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            value,
            serde_json::json!({
                "columns": [
                    {"name": "n", "type": "int8"},
                    {"name": "b,\"x\"", "type": "bytea", "encoding": "base64"}
                ],
                "rows": [[1, "AP8="], ["9223372036854775807", ""], [null, "a,\"b\"\nc"]],
                "row_count": 3, "truncated": true, "duration_ms": 7
            })
        );
        let failed = write(Format::Json, Some("boom \"x\""));
        let value: serde_json::Value = serde_json::from_str(&failed).unwrap();
        assert_eq!(value["error"]["detail"], "boom \"x\"");
    }

    /// Writes every kind of cell, in one row, then an abandoned row.
    fn write_all_kinds(encoder: &mut Encoder) {
        encoder.columns(&columns());
        encoder.begin_row();
        encoder.null();
        encoder.bool(true);
        encoder.int(-3);
        encoder.int(i64::MAX);
        encoder.uint(u64::MAX);
        encoder.float(1.5);
        encoder.float(f64::NAN);
        encoder.text("a\"b");
        encoder.number_text("12.50");
        encoder.bytes(b"\x00\xff");
        encoder.json("{\"k\": [1, 2]}");
        encoder.end_row();
        encoder.begin_row();
        encoder.int(9);
        encoder.abandon_row();
    }

    #[test]
    fn a_collected_result_holds_the_values_its_json_holds() {
        let mut collecting = Encoder::collecting(ValueLimits::default());
        write_all_kinds(&mut collecting);
        collecting.finish(&Summary {
            row_count: 1,
            truncated: false,
            duration_ms: 1,
            error: None,
            affected_rows: Some(2),
        });
        assert!(collecting.take().is_empty(), "nothing is encoded");
        let values = collecting.take_values().expect("values");
        assert_eq!(values.columns, columns());
        // The same cells written as JSON, read back: the values a collected run holds.
        let mut json = Encoder::new(Format::Json);
        write_all_kinds(&mut json);
        json.finish(&Summary {
            row_count: 1,
            truncated: false,
            duration_ms: 1,
            error: None,
            affected_rows: Some(2),
        });
        let written: serde_json::Value =
            serde_json::from_slice(&json.take()).expect("a JSON result");
        assert_eq!(serde_json::json!(values.rows), written["rows"]);
        assert_eq!(values.rows.len(), 1, "the abandoned row is not kept");
    }

    #[test]
    fn ndjson_is_one_document_per_line() {
        let text = write(Format::Ndjson, Some("late failure"));
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(lines.len(), 5);
        assert_eq!(lines[1], serde_json::json!([1, "AP8="]));
        assert_eq!(lines[4]["error"]["detail"], "late failure");
        assert_eq!(lines[4]["row_count"], 3);
    }

    #[test]
    fn row_tokens_follow_each_row_as_the_client_reads_it() {
        let names = serde_json::json!(["n", "b,\"x\""]);
        let json: serde_json::Value = serde_json::from_str(&write_stamped(
            Format::Json,
            None,
            Some(std::sync::Arc::new(Echo)),
        ))
        .unwrap();
        let tokens = json["row_tokens"].as_array().unwrap();
        assert_eq!(tokens.len(), 3);
        for (token, row) in tokens.iter().zip(json["rows"].as_array().unwrap()) {
            let token: serde_json::Value = serde_json::from_str(token.as_str().unwrap()).unwrap();
            assert_eq!(token, serde_json::json!([names, row]));
        }
        assert_eq!(json["row_count"], 3);
        let ndjson = write_stamped(Format::Ndjson, None, Some(std::sync::Arc::new(Echo)));
        let lines: Vec<serde_json::Value> = ndjson
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(lines.len(), 8, "{ndjson}");
        for pair in [1, 3, 5] {
            let token: serde_json::Value =
                serde_json::from_str(lines[pair + 1]["row_token"].as_str().unwrap()).unwrap();
            assert_eq!(token, serde_json::json!([names, lines[pair]]));
        }
        let csv = write_stamped(Format::Csv, None, Some(std::sync::Arc::new(Echo)));
        assert_eq!(csv, write(Format::Csv, None), "CSV carries no token");
    }

    #[test]
    fn csv_quotes_what_it_must() {
        let text = write(Format::Csv, None);
        assert_eq!(
            text,
            "n,\"b,\"\"x\"\"\"\r\n1,AP8=\r\n9223372036854775807,\r\n,\"a,\"\"b\"\"\nc\"\r\n"
        );
    }

    #[test]
    fn accept_chooses_the_format() {
        assert_eq!(Format::from_accept(None), Format::Json);
        assert_eq!(Format::from_accept(Some("text/csv")), Format::Csv);
        assert_eq!(
            Format::from_accept(Some("application/x-ndjson; q=1, */*")),
            Format::Ndjson
        );
        assert_eq!(Format::from_accept(Some("*/*")), Format::Json);
    }

    #[test]
    fn floats_that_json_cannot_hold_are_strings() {
        let mut encoder = Encoder::new(Format::Json);
        encoder.begin_row();
        encoder.float(f64::NAN);
        encoder.float(1.5);
        encoder.float(f64::NEG_INFINITY);
        encoder.int(-(1 << 53));
        encoder.int(-(1 << 53) - 1);
        encoder.end_row();
        assert_eq!(
            String::from_utf8(encoder.take().to_vec()).unwrap(),
            r#"["NaN",1.5,"-Infinity",-9007199254740992,"-9007199254740993"]"#
        );
    }

    #[test]
    fn a_pretty_json_document_stays_on_its_row_line() {
        let mut encoder = Encoder::new(Format::Ndjson);
        encoder.columns(&[Column {
            name: "QUERY PLAN".to_owned(),
            type_name: "json".to_owned(),
            base64: false,
        }]);
        encoder.begin_row();
        encoder.json("[\n  {\"Plan\": {\"Node Type\": \"Result\",\r\n \"x\": \"a\\nb\"}}\n]");
        encoder.end_row();
        let text = String::from_utf8(encoder.take().to_vec()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        let row: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(
            row[0][0]["Plan"]["x"], "a\nb",
            "a newline inside a string stays"
        );
    }
}
