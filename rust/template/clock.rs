//! `strftime_now(format)`, as transformers registers it (`datetime.now().strftime(format)`), for
//! templates that print today's date (Llama 3.1/3.2: "Today Date: 26 Jul 2024"). The date can be
//! fixed (`ChatTemplate(..., date=...)`), so a count is reproducible; otherwise it is the system
//! clock's, in UTC (no time-zone database is embedded).

use std::time::{SystemTime, UNIX_EPOCH};

const MONTHS: [&str; 12] =
    ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
const DAYS: [&str; 7] = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];

/// A moment as a civil date and time (UTC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Moment {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (i64::from(m) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day count since 1970-01-01 (`civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, u32::try_from(m).unwrap_or(1), u32::try_from(d).unwrap_or(1))
}

impl Moment {
    pub fn now() -> Self {
        let secs = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        let secs = i64::try_from(secs).unwrap_or(0);
        let (year, month, day) = civil_from_days(secs.div_euclid(86_400));
        let rest = secs.rem_euclid(86_400);
        let part = |n: i64| u32::try_from(n).unwrap_or(0);
        Moment { year, month, day, hour: part(rest / 3600), minute: part(rest / 60 % 60), second: part(rest % 60) }
    }

    /// `YYYY-MM-DD`, optionally with `THH:MM[:SS]`; None when it is not a real date.
    pub fn parse(text: &str) -> Option<Self> {
        let (date, time) = text.trim().split_once(['T', ' ']).unwrap_or((text.trim(), ""));
        let mut d = date.splitn(3, '-');
        let year: i64 = d.next()?.parse().ok()?;
        let month: u32 = d.next()?.parse().ok()?;
        let day: u32 = d.next()?.parse().ok()?;
        let mut t = time.split(':').filter(|s| !s.is_empty()).map(|s| s.parse::<u32>().ok());
        let hour = t.next().flatten().unwrap_or(0);
        let minute = t.next().flatten().unwrap_or(0);
        let second = t.next().flatten().unwrap_or(0);
        let m = Moment { year, month, day, hour, minute, second };
        let real = (1..=12).contains(&month)
            && day >= 1
            && civil_from_days(days_from_civil(year, month, day)) == (year, month, day)
            && hour < 24
            && minute < 60
            && second < 60;
        real.then_some(m)
    }

    fn weekday(&self) -> usize {
        // 1970-01-01 was a Thursday (index 3 from Monday).
        usize::try_from((days_from_civil(self.year, self.month, self.day) + 3).rem_euclid(7)).unwrap_or(0)
    }

    fn day_of_year(&self) -> i64 {
        days_from_civil(self.year, self.month, self.day) - days_from_civil(self.year, 1, 1) + 1
    }

    /// Python's `strftime` for the C89 directives (`%a %A %b %B %d %m %y %Y %H %I %p %M %S %j %%`,
    /// and `%e`); anything else is written as is, as glibc does for an unknown one.
    pub fn strftime(&self, format: &str) -> String {
        let month = MONTHS[usize::try_from(self.month.saturating_sub(1)).unwrap_or(0).min(11)];
        let day = DAYS[self.weekday().min(6)];
        let mut out = String::new();
        let mut chars = format.chars();
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            match chars.next() {
                Some('a') => out.push_str(&day[..3]),
                Some('A') => out.push_str(day),
                Some('b') | Some('h') => out.push_str(&month[..3]),
                Some('B') => out.push_str(month),
                Some('d') => out.push_str(&format!("{:02}", self.day)),
                Some('e') => out.push_str(&format!("{:>2}", self.day)),
                Some('m') => out.push_str(&format!("{:02}", self.month)),
                Some('y') => out.push_str(&format!("{:02}", self.year.rem_euclid(100))),
                Some('Y') => out.push_str(&self.year.to_string()),
                Some('H') => out.push_str(&format!("{:02}", self.hour)),
                Some('I') => out.push_str(&format!("{:02}", if self.hour % 12 == 0 { 12 } else { self.hour % 12 })),
                Some('p') => out.push_str(if self.hour < 12 { "AM" } else { "PM" }),
                Some('M') => out.push_str(&format!("{:02}", self.minute)),
                Some('S') => out.push_str(&format!("{:02}", self.second)),
                Some('j') => out.push_str(&format!("{:03}", self.day_of_year())),
                Some('%') => out.push('%'),
                Some(other) => {
                    out.push('%');
                    out.push(other);
                }
                None => out.push('%'),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_format_as_python_does() {
        let m = Moment::parse("2024-07-26").unwrap();
        assert_eq!(m.strftime("%d %b %Y"), "26 Jul 2024");
        assert_eq!(m.strftime("%A, %B %d, %Y"), "Friday, July 26, 2024");
        assert_eq!(m.strftime("%Y-%m-%d %j %y %%"), "2024-07-26 208 24 %");
        assert_eq!(Moment::parse("2026-12-01T13:05:09").unwrap().strftime("%H:%M:%S %I %p %a"), "13:05:09 01 PM Tue");
        assert!(Moment::parse("2024-02-30").is_none() && Moment::parse("soon").is_none());
        assert_eq!(civil_from_days(days_from_civil(1999, 12, 31)), (1999, 12, 31));
        let now = Moment::now();
        assert!(now.year >= 2024 && (1..=12).contains(&now.month));
    }
}
