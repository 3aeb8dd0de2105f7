//! Tokenising and field parsing: numbers, dates, times, degrees-minutes-seconds.
//!
//! Everything here works on borrowed slices of the input line and allocates nothing on the
//! success path.

use chrono::{DateTime, Datelike, NaiveDate, Timelike, Utc};

use super::error::{LineCtx, Res};

/// The byte offset of the first `\n` in `bytes`, eight bytes at a time.
fn find_newline(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_le_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);
    const NEWLINES: u64 = u64::from_le_bytes([b'\n'; 8]);
    let mut chunks = bytes.chunks_exact(8);
    let mut offset = 0;
    for chunk in &mut chunks {
        let word = u64::from_le_bytes(<[u8; 8]>::try_from(chunk).unwrap_or_default());
        let x = word ^ NEWLINES;
        // The lowest set high bit marks the first zero byte of `x` (borrows only run upwards).
        let zero = x.wrapping_sub(ONES) & !x & HIGHS;
        if zero != 0 {
            return Some(offset + (zero.trailing_zeros() / 8) as usize);
        }
        offset += 8;
    }
    let rest = chunks.remainder();
    rest.iter().position(|&b| b == b'\n').map(|i| offset + i)
}

/// The lines of `text` exactly as [`str::lines`] gives them (split at `\n`, a `\r` before it
/// dropped, no empty line after a final `\n`), found faster for lines of typical REP length.
pub(super) fn lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let line = match find_newline(rest.as_bytes()) {
            Some(end) => {
                let line = rest.get(..end).unwrap_or_default();
                rest = rest.get(end + 1..).unwrap_or_default();
                line.strip_suffix('\r').unwrap_or(line)
            }
            None => std::mem::take(&mut rest),
        };
        Some(line)
    })
}

/// A whitespace-delimited token and its byte offset in the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Tok<'a> {
    pub text: &'a str,
    pub start: usize,
}

impl<'a> Tok<'a> {
    /// Byte offset just past the token.
    pub(crate) fn end(&self) -> usize {
        self.start + self.text.len()
    }
}

/// A cursor over the whitespace-separated tokens of one line.
pub(super) struct Cursor<'a> {
    line: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(line: &'a str) -> Self {
        Self { line, pos: 0 }
    }

    fn skip_ws(&self, mut pos: usize) -> usize {
        let bytes = self.line.as_bytes();
        while pos < bytes.len() && bytes[pos].is_ascii_whitespace() {
            pos += 1;
        }
        pos
    }

    fn scan(&self) -> Option<Tok<'a>> {
        let bytes = self.line.as_bytes();
        let start = self.skip_ws(self.pos);
        if start >= bytes.len() {
            return None;
        }
        let mut end = start;
        while end < bytes.len() && !bytes[end].is_ascii_whitespace() {
            end += 1;
        }
        // Both ends sit next to ASCII bytes (or the line's ends), so they are char boundaries.
        self.line.get(start..end).map(|text| Tok { text, start })
    }

    /// The next token, without consuming it.
    pub(crate) fn peek(&self) -> Option<Tok<'a>> {
        self.scan()
    }

    /// The next token.
    pub(crate) fn next_token(&mut self) -> Option<Tok<'a>> {
        let tok = self.scan()?;
        self.pos = tok.end();
        Some(tok)
    }

    /// The next token, or a "missing" error.
    pub(crate) fn require(
        &mut self,
        ctx: &LineCtx<'_>,
        field: &'static str,
        expected: &str,
    ) -> Res<Tok<'a>> {
        self.next_token()
            .ok_or_else(|| ctx.missing(field, expected))
    }

    /// A name: one token, or a run of text enclosed in double quotes (which may contain
    /// whitespace). The quotes are not part of the returned text.
    pub(crate) fn name(
        &mut self,
        ctx: &LineCtx<'_>,
        field: &'static str,
        expected: &str,
    ) -> Res<Tok<'a>> {
        let start = self.skip_ws(self.pos);
        if self.line.as_bytes().get(start) != Some(&b'"') {
            return self.require(ctx, field, expected);
        }
        let after = start + 1;
        let Some(close) = self.line.get(after..).and_then(|rest| rest.find('"')) else {
            let text = self.line.get(start..).unwrap_or_default().trim_end();
            return Err(ctx.invalid_at(field, start, text, "a closing double quote"));
        };
        let text = self.line.get(after..after + close).unwrap_or_default();
        self.pos = after + close + 1;
        Ok(Tok { text, start: after })
    }

    /// The rest of the line, trimmed; empty when nothing is left.
    pub(crate) fn rest(&self) -> &'a str {
        self.line.get(self.pos..).unwrap_or_default().trim()
    }
}

const POW10: [f64; 16] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

/// Parses a decimal number. Plain `[+-]digits[.digits]` with at most 15 significant digits
/// takes a fast path (an exact integer divided by an exact power of ten, which IEEE-754 rounds
/// correctly, so the result equals `str::parse`); anything else falls back to `str::parse`.
pub(super) fn parse_f64(s: &str) -> Option<f64> {
    let bytes = s.as_bytes();
    let (neg, digits) = match bytes.first() {
        Some(b'-') => (true, &bytes[1..]),
        Some(b'+') => (false, &bytes[1..]),
        _ => (false, bytes),
    };
    let mut mantissa: u64 = 0;
    let mut count = 0usize;
    let mut frac = 0usize;
    let mut seen_dot = false;
    let mut fast = true;
    for &c in digits {
        match c {
            b'0'..=b'9' if count < 15 => {
                mantissa = mantissa * 10 + u64::from(c - b'0');
                count += 1;
                if seen_dot {
                    frac += 1;
                }
            }
            b'.' if !seen_dot => seen_dot = true,
            _ => {
                fast = false;
                break;
            }
        }
    }
    if fast
        && count > 0
        && let Some(scale) = POW10.get(frac)
    {
        // The mantissa has at most 15 digits, so it is exact as an f64.
        let value = mantissa as f64 / scale;
        return Some(if neg { -value } else { value });
    }
    s.parse::<f64>().ok()
}

/// A finite number, or an "invalid" error.
pub(super) fn number(
    ctx: &LineCtx<'_>,
    tok: Tok<'_>,
    field: &'static str,
    expected: &str,
) -> Res<f64> {
    match parse_f64(tok.text) {
        Some(v) if v.is_finite() => Ok(v),
        _ => Err(ctx.invalid(field, tok, expected)),
    }
}

/// Whether a token is one of REP's "no value" markers (`NULL`, `N/A`…): Debrief treats any
/// token starting with `N` that way in sensor lines — except `NaN`, which is a number that is
/// not one and so an error, as `inf` is, rather than a silently dropped value.
pub(super) fn is_null(tok: Tok<'_>) -> bool {
    matches!(tok.text.as_bytes().first(), Some(b'N' | b'n'))
        && !tok.text.eq_ignore_ascii_case("nan")
}

fn two_digits(b: &[u8], at: usize) -> u32 {
    match (b.get(at), b.get(at + 1)) {
        (Some(hi), Some(lo)) => u32::from(hi - b'0') * 10 + u32::from(lo - b'0'),
        _ => 0,
    }
}

fn days_in_month(year: i32, month: u32) -> u32 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

const DATE_EXPECTED: &str = "YYMMDD or YYYYMMDD";

/// `YYMMDD` (years 50–99 → 19xx, 00–49 → 20xx) or `YYYYMMDD`.
pub(super) fn parse_date(ctx: &LineCtx<'_>, tok: Tok<'_>) -> Res<NaiveDate> {
    let b = tok.text.as_bytes();
    if !(b.len() == 6 || b.len() == 8) || !b.iter().all(u8::is_ascii_digit) {
        return Err(ctx.invalid("date", tok, DATE_EXPECTED));
    }
    let (year, at) = if b.len() == 6 {
        let yy = two_digits(b, 0) as i32;
        (if yy >= 50 { 1900 + yy } else { 2000 + yy }, 2)
    } else {
        (two_digits(b, 0) as i32 * 100 + two_digits(b, 2) as i32, 4)
    };
    let month = two_digits(b, at);
    if !(1..=12).contains(&month) {
        let text = tok.text.get(at..at + 2).unwrap_or(tok.text);
        return Err(ctx.invalid_at("month", tok.start + at, text, "01–12"));
    }
    let day = two_digits(b, at + 2);
    let last = days_in_month(year, month);
    if !(1..=last).contains(&day) {
        let text = tok.text.get(at + 2..at + 4).unwrap_or(tok.text);
        return Err(ctx.invalid_at(
            "day",
            tok.start + at + 2,
            text,
            format!("01–{last} for {year:04}-{month:02}"),
        ));
    }
    NaiveDate::from_ymd_opt(year, month, day).ok_or_else(|| ctx.invalid("date", tok, DATE_EXPECTED))
}

const TIME_EXPECTED: &str = "HHMMSS or HHMMSS.sss";

/// `HHMMSS[.fff…]` (a 5-digit `HMMSS` is read with a leading zero) on `date`, as UTC.
pub(super) fn parse_time(ctx: &LineCtx<'_>, tok: Tok<'_>, date: NaiveDate) -> Res<DateTime<Utc>> {
    // The token is short: a plain scan beats `split_once`'s searcher.
    let (whole, frac) = match tok.text.bytes().position(|b| b == b'.') {
        Some(dot) => (
            tok.text.get(..dot).unwrap_or_default(),
            tok.text.get(dot + 1..).unwrap_or_default(),
        ),
        None => (tok.text, ""),
    };
    let wb = whole.as_bytes();
    let fb = frac.as_bytes();
    if !(wb.len() == 6 || wb.len() == 5)
        || !wb.iter().all(u8::is_ascii_digit)
        || !fb.iter().all(u8::is_ascii_digit)
    {
        return Err(ctx.invalid("time", tok, TIME_EXPECTED));
    }
    // Offsets of HH, MM and SS within the token (a 5-digit time has a 1-digit hour).
    let (hour, m_at) = if wb.len() == 6 {
        (two_digits(wb, 0), 2)
    } else {
        (u32::from(wb[0] - b'0'), 1)
    };
    let minute = two_digits(wb, m_at);
    let second = two_digits(wb, m_at + 2);
    if hour > 23 {
        let text = whole.get(..m_at).unwrap_or(whole);
        return Err(ctx.invalid_at("hour", tok.start, text, "00–23"));
    }
    if minute > 59 {
        let text = whole.get(m_at..m_at + 2).unwrap_or(whole);
        return Err(ctx.invalid_at("minute", tok.start + m_at, text, "00–59"));
    }
    if second > 59 {
        let text = whole.get(m_at + 2..).unwrap_or(whole);
        return Err(ctx.invalid_at("second", tok.start + m_at + 2, text, "00–59"));
    }
    let mut nanos = 0u32;
    for i in 0..9 {
        nanos = nanos * 10 + fb.get(i).map_or(0, |d| u32::from(d - b'0'));
    }
    date.and_hms_nano_opt(hour, minute, second, nanos)
        .map(|t| t.and_utc())
        .ok_or_else(|| ctx.invalid("time", tok, TIME_EXPECTED))
}

/// A date token followed by a time token.
pub(super) fn parse_timestamp(ctx: &LineCtx<'_>, cur: &mut Cursor<'_>) -> Res<DateTime<Utc>> {
    let date_tok = cur.require(ctx, "date", DATE_EXPECTED)?;
    let date = parse_date(ctx, date_tok)?;
    let time_tok = cur.require(ctx, "time", TIME_EXPECTED)?;
    parse_time(ctx, time_tok, date)
}

/// Latitude or longitude.
#[derive(Clone, Copy)]
pub(super) enum Axis {
    Lat,
    Lon,
}

impl Axis {
    fn max(self) -> f64 {
        match self {
            Self::Lat => 90.0,
            Self::Lon => 180.0,
        }
    }
}

struct AxisText {
    degrees: &'static str,
    minutes: &'static str,
    seconds: &'static str,
    hemisphere: &'static str,
    whole: &'static str,
    degrees_expected: &'static str,
    whole_expected: &'static str,
    hemispheres: &'static str,
}

const LAT_TEXT: AxisText = AxisText {
    degrees: "latitude degrees",
    minutes: "latitude minutes",
    seconds: "latitude seconds",
    hemisphere: "latitude hemisphere",
    whole: "latitude",
    degrees_expected: "0–90",
    whole_expected: "at most 90 degrees",
    hemispheres: "N or S",
};

const LON_TEXT: AxisText = AxisText {
    degrees: "longitude degrees",
    minutes: "longitude minutes",
    seconds: "longitude seconds",
    hemisphere: "longitude hemisphere",
    whole: "longitude",
    degrees_expected: "0–180",
    whole_expected: "at most 180 degrees",
    hemispheres: "E or W",
};

/// `DEG MIN SEC HEM` → signed decimal degrees (`deg + min/60 + sec/3600`, negated for S/W).
/// Degrees and minutes may be decimal (then the smaller units are usually 0).
///
/// `pending` is a degrees token already split off the previous hemisphere token (Debrief
/// accepts `N021` for `N 021`). For latitude, the returned token is the longitude degrees when
/// the hemisphere came glued to them.
fn parse_dms<'a>(
    ctx: &LineCtx<'_>,
    cur: &mut Cursor<'a>,
    axis: Axis,
    pending: Option<Tok<'a>>,
    expected: &str,
) -> Res<(f64, Option<Tok<'a>>)> {
    let t = match axis {
        Axis::Lat => &LAT_TEXT,
        Axis::Lon => &LON_TEXT,
    };
    let max = axis.max();
    let deg_tok = match pending {
        Some(tok) => tok,
        None => cur.require(ctx, t.degrees, expected)?,
    };
    let deg = match parse_f64(deg_tok.text) {
        Some(v) if (0.0..=max).contains(&v) => v,
        _ => return Err(ctx.invalid(t.degrees, deg_tok, t.degrees_expected)),
    };
    let min_tok = cur.require(ctx, t.minutes, expected)?;
    let min = match parse_f64(min_tok.text) {
        Some(v) if (0.0..60.0).contains(&v) => v,
        _ => return Err(ctx.invalid(t.minutes, min_tok, "0–59")),
    };
    let sec_tok = cur.require(ctx, t.seconds, expected)?;
    let sec = match parse_f64(sec_tok.text) {
        Some(v) if (0.0..60.0).contains(&v) => v,
        _ => return Err(ctx.invalid(t.seconds, sec_tok, "0–59")),
    };
    let hem_tok = cur.require(ctx, t.hemisphere, expected)?;
    let hb = hem_tok.text.as_bytes();
    let (negative, glued) = match (axis, hb.first().map(u8::to_ascii_uppercase), hb.len()) {
        (Axis::Lat, Some(b'N'), 1) => (false, None),
        (Axis::Lat, Some(b'S'), 1) => (true, None),
        (Axis::Lat, Some(b'N'), _) => (false, Some(hem_tok)),
        (Axis::Lat, Some(b'S'), _) => (true, Some(hem_tok)),
        (Axis::Lon, Some(b'E'), 1) => (false, None),
        (Axis::Lon, Some(b'W'), 1) => (true, None),
        _ => return Err(ctx.invalid(t.hemisphere, hem_tok, t.hemispheres)),
    };
    let value = deg + min / 60.0 + sec / 3600.0;
    if value > max {
        let whole = ctx
            .line
            .get(deg_tok.start..sec_tok.end())
            .unwrap_or(deg_tok.text);
        return Err(ctx.invalid_at(t.whole, deg_tok.start, whole, t.whole_expected));
    }
    // `N021`: the longitude degrees follow the hemisphere letter in the same token.
    let rest = glued.map(|tok| Tok {
        text: tok.text.get(1..).unwrap_or_default(),
        start: tok.start + 1,
    });
    Ok((if negative { -value } else { value }, rest))
}

/// A latitude then a longitude, returned as `[lon, lat]` (GeoJSON order). `expected`
/// describes the whole line, for "missing" errors.
pub(super) fn parse_latlon(
    ctx: &LineCtx<'_>,
    cur: &mut Cursor<'_>,
    expected: &str,
) -> Res<[f64; 2]> {
    let (lat, glued) = parse_dms(ctx, cur, Axis::Lat, None, expected)?;
    let (lon, _) = parse_dms(ctx, cur, Axis::Lon, glued, expected)?;
    Ok([lon, lat])
}

/// The longest text [`write_time`] writes: `YYYY-MM-DDTHH:MM:SS.fffffffff+00:00`.
pub(super) const TIME_LEN: usize = 35;

/// RFC 3339 with a `+00:00` offset and the shortest of no, 3, 6 or 9 fractional digits that is
/// exact — the same text as chrono's `to_rfc3339_opts(SecondsFormat::AutoSi, false)` — written
/// into `buf` without allocating; returns the ASCII text written. `None` for years outside
/// 0–9999 (which REP cannot express).
pub(super) fn write_time<'b>(t: &DateTime<Utc>, buf: &'b mut [u8; TIME_LEN]) -> Option<&'b [u8]> {
    fn put2(buf: &mut [u8; TIME_LEN], at: usize, v: u32) {
        if let Some(d) = buf.get_mut(at..at + 2) {
            d[0] = b'0' + (v / 10 % 10) as u8;
            d[1] = b'0' + (v % 10) as u8;
        }
    }
    let utc = t.naive_utc();
    let (date, time) = (utc.date(), utc.time());
    let year = date.year();
    if !(0..=9999).contains(&year) {
        return None;
    }
    let nanos = time.nanosecond();
    let (fraction, digits) = if nanos == 0 {
        (0, 0)
    } else if nanos.is_multiple_of(1_000_000) {
        (nanos / 1_000_000, 3)
    } else if nanos.is_multiple_of(1_000) {
        (nanos / 1_000, 6)
    } else {
        (nanos, 9)
    };
    *buf = *b"0000-00-00T00:00:00.000000000+00:00"; // the offset moves up below
    let y = year.unsigned_abs();
    put2(buf, 0, y / 100);
    put2(buf, 2, y % 100);
    put2(buf, 5, date.month());
    put2(buf, 8, date.day());
    put2(buf, 11, time.hour());
    put2(buf, 14, time.minute());
    put2(buf, 17, time.second());
    let mut end = 19;
    if digits > 0 {
        end += 1; // the '.'
        let mut div = 10u32.pow(digits - 1);
        while div > 0 {
            if let Some(d) = buf.get_mut(end) {
                *d = b'0' + (fraction / div % 10) as u8;
            }
            end += 1;
            div /= 10;
        }
    }
    let text = buf.get_mut(..end + 6)?;
    if let Some(offset) = text.last_chunk_mut::<6>() {
        *offset = *b"+00:00";
    }
    Some(&*text)
}

/// [`write_time`]'s text as a `String` (chrono's formatting for years it cannot write).
pub(super) fn fmt_time(t: &DateTime<Utc>) -> String {
    let mut buf = [0; TIME_LEN];
    match write_time(t, &mut buf).map(std::str::from_utf8) {
        Some(Ok(text)) => text.to_owned(),
        _ => t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, false),
    }
}

/// Serialises a time as [`fmt_time`]'s text, formatted on the stack.
pub(super) struct Rfc3339<'a>(pub &'a DateTime<Utc>);

impl serde::Serialize for Rfc3339<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut buf = [0; TIME_LEN];
        match write_time(self.0, &mut buf).map(std::str::from_utf8) {
            Some(Ok(text)) => serializer.serialize_str(text),
            _ => serializer.serialize_str(&fmt_time(self.0)),
        }
    }
}

/// A lowercase ASCII slug: runs of anything but letters and digits become one `-`.
pub(super) fn slug(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    while out.ends_with('-') {
        out.pop();
    }
    if out.is_empty() {
        out.push_str("unnamed");
    }
    out
}
