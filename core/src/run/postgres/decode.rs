//! Values as PostgreSQL sends them (binary format) written as the result's JSON or CSV: each
//! column's [`Render`], chosen once from its type, and the readers of the types that have no
//! text form in the driver (numeric, interval, dates and times, arrays).

use tokio_postgres::types::{FromSql, Kind, Type};

use super::super::encode::Encoder;

/// A value's bytes as the server sent them (binary format), whatever its type.
pub(super) struct Raw<'a>(pub(super) Option<&'a [u8]>);

impl<'a> FromSql<'a> for Raw<'a> {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(Some(raw)))
    }

    fn from_sql_null(_: &Type) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(None))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

/// How a column's values are written, chosen once per column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Render {
    Bool,
    Int2,
    Int4,
    Int8,
    Oid,
    Float4,
    Float8,
    Numeric,
    Text,
    Json,
    Jsonb,
    Uuid,
    Date,
    Time,
    Timestamp,
    Timestamptz,
    Interval,
    /// An array of elements written this way: a JSON array (its JSON text in CSV).
    Array(Box<Render>),
    /// Bytes, and every type without a text form here: base64.
    Bytes,
    /// A protected column left out of the result.
    Hidden,
    /// A protected column whose values are masked.
    Masked,
    /// A masking view's masked column: its text (the mask's), typed `masked`.
    MaskedText,
}

impl Render {
    pub(super) fn of(ty: &Type) -> Self {
        match *ty {
            Type::BOOL => Render::Bool,
            Type::INT2 => Render::Int2,
            Type::INT4 => Render::Int4,
            Type::INT8 => Render::Int8,
            Type::OID => Render::Oid,
            Type::FLOAT4 => Render::Float4,
            Type::FLOAT8 => Render::Float8,
            Type::NUMERIC => Render::Numeric,
            Type::TEXT
            | Type::VARCHAR
            | Type::BPCHAR
            | Type::NAME
            | Type::UNKNOWN
            | Type::XML
            | Type::CHAR => Render::Text,
            Type::JSON => Render::Json,
            Type::JSONB => Render::Jsonb,
            Type::UUID => Render::Uuid,
            Type::DATE => Render::Date,
            Type::TIME => Render::Time,
            Type::TIMESTAMP => Render::Timestamp,
            Type::TIMESTAMPTZ => Render::Timestamptz,
            Type::INTERVAL => Render::Interval,
            _ => match ty.kind() {
                Kind::Enum(_) => Render::Text,
                Kind::Domain(inner) => Render::of(inner),
                Kind::Array(element) => match Render::of(element) {
                    // An array of what has no text form here is bytes as a whole.
                    Render::Bytes if *element != Type::BYTEA => Render::Bytes,
                    element => Render::Array(Box::new(element)),
                },
                _ if ty.name() == "citext" => Render::Text,
                _ => Render::Bytes,
            },
        }
    }

    pub(super) fn write(&self, out: &mut Encoder, raw: &[u8]) {
        fn array<const N: usize>(raw: &[u8]) -> Option<[u8; N]> {
            raw.get(..N).and_then(|bytes| bytes.try_into().ok())
        }
        match self {
            Render::Hidden => {}
            Render::Masked => out.text(crate::run::protect::MASK),
            Render::Bool => out.bool(raw.first().is_some_and(|b| *b != 0)),
            Render::Int2 => out.int(array(raw).map_or(0, i16::from_be_bytes).into()),
            Render::Int4 => out.int(array(raw).map_or(0, i32::from_be_bytes).into()),
            Render::Int8 => out.int(array(raw).map_or(0, i64::from_be_bytes)),
            Render::Oid => out.uint(array(raw).map_or(0, u32::from_be_bytes).into()),
            Render::Float4 => out.float(array(raw).map_or(0.0, f32::from_be_bytes).into()),
            Render::Float8 => out.float(array(raw).map_or(0.0, f64::from_be_bytes)),
            Render::Numeric => out.number_text(&numeric(raw)),
            Render::Text | Render::MaskedText => out.text(&utf8(raw)),
            Render::Json => out.json(&utf8(raw)),
            Render::Jsonb => out.json(&utf8(raw.get(1..).unwrap_or(b"null"))),
            Render::Uuid => match array::<16>(raw) {
                Some(bytes) => out.text(&uuid_text(bytes)),
                None => out.bytes(raw),
            },
            Render::Date => out.text(&date(array(raw).map_or(0, i32::from_be_bytes))),
            Render::Time => out.text(&time(array(raw).map_or(0, i64::from_be_bytes))),
            Render::Timestamp => out.text(&timestamp(array(raw).map_or(0, i64::from_be_bytes), "")),
            Render::Timestamptz => {
                out.text(&timestamp(array(raw).map_or(0, i64::from_be_bytes), "Z"));
            }
            Render::Interval => out.text(&interval(raw)),
            Render::Array(element) => match array_json(element, raw) {
                Some(json) => out.json(&json),
                None => out.bytes(raw),
            },
            Render::Bytes => out.bytes(raw),
        }
    }
}

/// An array in PostgreSQL's binary form (any number of dimensions) as JSON text, its
/// elements written by `element`; `None` when the bytes are not such an array.
pub(super) fn array_json(element: &Render, raw: &[u8]) -> Option<String> {
    fn int(raw: &[u8], at: usize) -> Option<i32> {
        raw.get(at..at + 4)?.try_into().ok().map(i32::from_be_bytes)
    }
    let dimensions = usize::try_from(int(raw, 0)?).ok()?;
    if dimensions == 0 {
        return Some("[]".to_owned());
    }
    let mut lengths = Vec::with_capacity(dimensions);
    for d in 0..dimensions {
        lengths.push(usize::try_from(int(raw, 12 + 8 * d)?).ok()?);
    }
    let mut at = 12 + 8 * dimensions;
    let mut values = Vec::new();
    let total: usize = lengths.iter().product();
    for _ in 0..total {
        let length = int(raw, at)?;
        at += 4;
        let mut encoder = Encoder::new(crate::run::Format::Json);
        encoder.begin_row();
        if length < 0 {
            encoder.null();
        } else {
            let length = usize::try_from(length).ok()?;
            element.write(&mut encoder, raw.get(at..at + length)?);
            at += length;
        }
        encoder.end_row();
        // `[value]`: the value's JSON text between the brackets.
        let row = encoder.take();
        values.push(String::from_utf8_lossy(&row[1..row.len() - 1]).into_owned());
    }
    // Nest the flat values by the dimensions, innermost first.
    for &length in lengths.iter().rev() {
        values = values
            .chunks(length.max(1))
            .map(|chunk| format!("[{}]", chunk.join(",")))
            .collect();
    }
    values.into_iter().next()
}

/// PostgreSQL's epoch, 2000-01-01 (the tests compare with chrono's writing).
#[cfg(test)]
fn epoch() -> chrono::NaiveDateTime {
    chrono::NaiveDate::from_ymd_opt(2000, 1, 1)
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .unwrap_or_default()
}

pub(super) fn date(days: i32) -> String {
    match days {
        i32::MAX => "infinity".to_owned(),
        i32::MIN => "-infinity".to_owned(),
        days => {
            let mut out = String::with_capacity(10);
            write_date(&mut out, i64::from(days));
            out
        }
    }
}

pub(super) fn time(micros: i64) -> String {
    let mut out = String::with_capacity(15);
    write_time(&mut out, micros.rem_euclid(MICROS_PER_DAY));
    out
}

pub(super) fn timestamp(micros: i64, zone: &str) -> String {
    match micros {
        i64::MAX => "infinity".to_owned(),
        i64::MIN => "-infinity".to_owned(),
        micros => {
            let mut out = String::with_capacity(27 + zone.len());
            write_date(&mut out, micros.div_euclid(MICROS_PER_DAY));
            out.push('T');
            write_time(&mut out, micros.rem_euclid(MICROS_PER_DAY));
            out.push_str(zone);
            out
        }
    }
}

const MICROS_PER_DAY: i64 = 86_400_000_000;

/// `n` as at least `width` decimal digits, zero-padded.
fn push_digits(out: &mut String, n: u64, width: usize) {
    let digits = n.to_string();
    for _ in digits.len()..width {
        out.push('0');
    }
    out.push_str(&digits);
}

/// `n` (below 10^`width`) as exactly `width` digits, without allocating.
fn push_fixed(out: &mut String, n: u32, width: u32) {
    for place in (0..width).rev() {
        let digit = (n / 10u32.pow(place)) % 10;
        out.push(char::from(b'0' + digit as u8));
    }
}

/// The day `days` after PostgreSQL's epoch (2000-01-01) as `%Y-%m-%d` (chrono's way: four
/// digits, a sign before a year below 0 or above 9999), for every day PostgreSQL holds (the
/// proleptic Gregorian calendar, by Howard Hinnant's `civil_from_days`).
fn write_date(out: &mut String, days: i64) {
    // Days since 0000-03-01.
    let z = days + 10_957 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    match year {
        0..=9999 => push_fixed(out, year as u32, 4),
        10_000.. => {
            out.push('+');
            push_digits(out, year as u64, 4);
        }
        _ => {
            out.push('-');
            push_digits(out, year.unsigned_abs(), 4);
        }
    }
    out.push('-');
    push_fixed(out, month as u32, 2);
    out.push('-');
    push_fixed(out, day as u32, 2);
}

/// `micros` into a day (0 to 86,400,000,000) as chrono's `%H:%M:%S%.f`: the fraction left out
/// when zero, else in 3 or 6 digits, as few as hold it.
fn write_time(out: &mut String, micros: i64) {
    let seconds = micros / 1_000_000;
    let fraction = (micros % 1_000_000) as u32;
    push_fixed(out, (seconds / 3_600) as u32, 2);
    out.push(':');
    push_fixed(out, (seconds / 60 % 60) as u32, 2);
    out.push(':');
    push_fixed(out, (seconds % 60) as u32, 2);
    if fraction == 0 {
        return;
    }
    out.push('.');
    if fraction.is_multiple_of(1_000) {
        push_fixed(out, fraction / 1_000, 3);
    } else {
        push_fixed(out, fraction, 6);
    }
}

/// An interval as ISO 8601 (`P1Y2M3DT4H5M6.5S`).
pub(super) fn interval(raw: &[u8]) -> String {
    let (Some(micros), Some(days), Some(months)) = (
        raw.get(..8)
            .and_then(|b| b.try_into().ok())
            .map(i64::from_be_bytes),
        raw.get(8..12)
            .and_then(|b| b.try_into().ok())
            .map(i32::from_be_bytes),
        raw.get(12..16)
            .and_then(|b| b.try_into().ok())
            .map(i32::from_be_bytes),
    ) else {
        return String::new();
    };
    let mut text = String::from("P");
    let (years, months) = (months / 12, months % 12);
    for (value, unit) in [(years, 'Y'), (months, 'M'), (days, 'D')] {
        if value != 0 {
            text.push_str(&format!("{value}{unit}"));
        }
    }
    let hours = micros / 3_600_000_000;
    let minutes = (micros / 60_000_000) % 60;
    let seconds = micros % 60_000_000;
    if micros != 0 {
        text.push('T');
        if hours != 0 {
            text.push_str(&format!("{hours}H"));
        }
        if minutes != 0 {
            text.push_str(&format!("{minutes}M"));
        }
        if seconds != 0 {
            let whole = seconds / 1_000_000;
            let fraction = (seconds % 1_000_000).abs();
            if fraction == 0 {
                text.push_str(&format!("{whole}S"));
            } else {
                let sign = if seconds < 0 && whole == 0 { "-" } else { "" };
                let digits = format!("{fraction:06}");
                text.push_str(&format!("{sign}{whole}.{}S", digits.trim_end_matches('0')));
            }
        }
    }
    if text == "P" {
        text.push_str("T0S");
    }
    text
}

pub(super) fn uuid_text(bytes: [u8; 16]) -> String {
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// A `numeric` in PostgreSQL's binary form (base-10000 digits) as its decimal text.
pub(super) fn numeric(raw: &[u8]) -> String {
    let word = |i: usize| {
        raw.get(i..i + 2)
            .and_then(|b| b.try_into().ok())
            .map(u16::from_be_bytes)
    };
    let (Some(ndigits), Some(weight), Some(sign), Some(dscale)) =
        (word(0), word(2), word(4), word(6))
    else {
        return String::new();
    };
    match sign {
        0xC000 => return "NaN".to_owned(),
        0xD000 => return "Infinity".to_owned(),
        0xF000 => return "-Infinity".to_owned(),
        _ => {}
    }
    let weight = i32::from(weight as i16);
    let digits: Vec<u16> = (0..usize::from(ndigits))
        .map(|i| word(8 + 2 * i).unwrap_or(0))
        .collect();
    let mut text = String::new();
    if sign == 0x4000 {
        text.push('-');
    }
    // The integer part: the digits of weight >= 0.
    if weight < 0 {
        text.push('0');
    } else {
        for position in 0..=weight {
            let digit = digits.get(position as usize).copied().unwrap_or(0);
            if position == 0 {
                text.push_str(&digit.to_string());
            } else {
                text.push_str(&format!("{digit:04}"));
            }
        }
    }
    let scale = usize::from(dscale);
    if scale > 0 {
        let mut fraction = String::new();
        let mut position = weight + 1;
        while fraction.len() < scale {
            let digit = if position < 0 {
                0
            } else {
                digits.get(position as usize).copied().unwrap_or(0)
            };
            fraction.push_str(&format!("{digit:04}"));
            position += 1;
        }
        fraction.truncate(scale);
        text.push('.');
        text.push_str(&fraction);
    }
    text
}

/// `raw` as text: borrowed when it is UTF-8 (what the server sends), else with U+FFFD for what
/// is not.
fn utf8(raw: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(raw) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(raw),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numeric_bytes(ndigits: u16, weight: i16, sign: u16, dscale: u16, digits: &[u16]) -> Vec<u8> {
        let mut raw = Vec::new();
        for word in [ndigits, weight as u16, sign, dscale] {
            raw.extend_from_slice(&word.to_be_bytes());
        }
        for digit in digits {
            raw.extend_from_slice(&digit.to_be_bytes());
        }
        raw
    }

    #[test]
    fn numerics_read_as_their_decimal_text() {
        assert_eq!(numeric(&numeric_bytes(2, 0, 0, 2, &[12, 3400])), "12.34");
        assert_eq!(numeric(&numeric_bytes(1, -1, 0x4000, 5, &[5])), "-0.00050");
        assert_eq!(numeric(&numeric_bytes(2, 1, 0, 0, &[1, 0])), "10000");
        assert_eq!(numeric(&numeric_bytes(0, 0, 0, 0, &[])), "0");
        assert_eq!(numeric(&numeric_bytes(0, 0, 0xC000, 0, &[])), "NaN");
        assert_eq!(
            numeric(&numeric_bytes(3, 2, 0, 0, &[9223, 3720, 3685])),
            "922337203685"
        );
    }

    #[test]
    fn intervals_and_times_read_as_iso_8601() {
        let mut raw = Vec::new();
        raw.extend_from_slice(&(3_723_500_000_i64).to_be_bytes());
        raw.extend_from_slice(&3_i32.to_be_bytes());
        raw.extend_from_slice(&14_i32.to_be_bytes());
        assert_eq!(interval(&raw), "P1Y2M3DT1H2M3.5S");
        assert_eq!(interval(&[0; 16]), "PT0S");
        assert_eq!(timestamp(0, "Z"), "2000-01-01T00:00:00Z");
        // Written as chrono's format strings write them, wherever the fast path applies.
        for micros in [
            0,
            1,
            1_000,
            123_456,
            1_500_000,
            -1,
            -86_400_000_001,
            63_000_000_000_000_123,
            -63_000_000_000_000_000,
            -730_000_000_000_000_000,
            -211_813_488_000_000_000,
            8_000_000_000_000_000_000,
        ] {
            let at = epoch() + chrono::Duration::microseconds(micros);
            assert_eq!(
                timestamp(micros, "Z"),
                format!("{}Z", at.format("%Y-%m-%dT%H:%M:%S%.f")),
                "{micros}"
            );
            assert_eq!(time(micros.rem_euclid(86_400_000_000)), {
                let t = chrono::NaiveTime::MIN
                    + chrono::Duration::microseconds(micros.rem_euclid(86_400_000_000));
                t.format("%H:%M:%S%.f").to_string()
            });
        }
        // Beyond what chrono holds: PostgreSQL's last timestamp and day.
        assert_eq!(
            timestamp(9_223_371_331_199_999_999, ""),
            "+294276-12-31T23:59:59.999999"
        );
        assert_eq!(date(2_145_031_948), "+5874897-12-31");
        for days in [
            0, 1, -1, 3_000_000, -800_000, -730_500, 2_900_000, -2_451_545,
        ] {
            let d = epoch().date() + chrono::Duration::days(days.into());
            assert_eq!(date(days), d.format("%Y-%m-%d").to_string(), "{days}");
        }
        assert_eq!(date(-1), "1999-12-31");
        assert_eq!(time(3_600_000_001), "01:00:00.000001");
    }
}
