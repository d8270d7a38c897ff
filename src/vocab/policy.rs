//! Vendor policy, as `targets.toml` records it: which ROCm releases list a target as supported
//! (and how), which targets each TheRock release builds, and which targets a project's default
//! HIP build keeps. Data only, each entry citing its source; what an install ships is never
//! read from here.

use serde::{Deserialize, Serialize};

/// The operating system a list is for.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Platform {
    Linux,
    Windows,
}

impl Platform {
    pub fn name(self) -> &'static str {
        match self {
            Platform::Linux => "Linux",
            Platform::Windows => "Windows",
        }
    }
}

/// How a release's documentation lists a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Level {
    /// Listed as supported (the HIP SDK column on Windows).
    Supported,
    /// Windows: the HIP runtime only, not the HIP SDK's libraries.
    RuntimeOnly,
    /// Listed, to be removed in a future release.
    Deprecated,
    /// Listed as not enabled in AMD's distributions.
    Unsupported,
    /// Not on the release's list: "not officially supported by AMD".
    NotListed,
    /// Left out of a list read from the compatibility matrix alone, which, unlike a per-GPU
    /// page, does not say that a GPU it leaves out is not supported.
    Unknown,
}

impl Level {
    /// The words a table shows.
    pub fn words(self) -> &'static str {
        match self {
            Level::Supported => "supported",
            Level::RuntimeOnly => "runtime only (no HIP SDK libraries)",
            Level::Deprecated => "deprecated",
            Level::Unsupported => "listed as unsupported",
            Level::NotListed => "not listed",
            Level::Unknown => "unknown (not named by a list whose silence proves nothing)",
        }
    }

    /// True when official support covers the target (deprecated still does).
    pub fn supported(self) -> bool {
        matches!(self, Level::Supported | Level::RuntimeOnly | Level::Deprecated)
    }
}

/// One `[[release]]`: a ROCm release (or several with one list) on one platform.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(!deny_unknown_fields)]
pub struct Release {
    pub platform: Platform,
    /// The releases this list is for (`6.4.2`), the first the newest.
    pub versions: Vec<String>,
    /// The HIP runtime's version in these releases (`6.4.43484`), as its library is named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hip: Option<String>,
    /// Targets listed as supported.
    #[serde(default)]
    pub listed: Vec<String>,
    /// Windows: targets with the runtime only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runtime_only: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deprecated: Vec<String>,
    /// Targets listed as unsupported.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unsupported: Vec<String>,
    /// True when the list was read from a per-GPU page (each GPU's level); false when from
    /// the compatibility matrix alone.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub levels: bool,
    /// Restrictions the source adds (operating systems, products).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// How old the list is: the date (`YYYY-MM-DD`) of the newest source it is read from (a
    /// commit's date, or the date a rendered page states).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    /// False for a list read only in part (a page whose lower rows were not read): a target
    /// it does not name is unknown there, not "not listed".
    #[serde(default = "yes", skip_serializing_if = "is_yes")]
    pub complete: bool,
    pub source: String,
}

fn yes() -> bool {
    true
}

fn is_yes(b: &bool) -> bool {
    *b
}

impl Release {
    /// How this release's own list names `target` (a processor name); `Policy::level` is the
    /// answer, which knows what a list without levels leaves out.
    fn listed_as(&self, target: &str) -> Level {
        let has = |l: &[String]| l.iter().any(|t| t == target);
        if has(&self.deprecated) {
            Level::Deprecated
        } else if has(&self.unsupported) {
            Level::Unsupported
        } else if has(&self.runtime_only) {
            Level::RuntimeOnly
        } else if has(&self.listed) {
            Level::Supported
        } else {
            Level::NotListed
        }
    }

    /// The newest release the list is for.
    pub fn newest_version(&self) -> Option<&String> {
        self.versions.iter().max_by_key(|v| version_key(v))
    }

    /// Its date as days since 1970-01-01, when it has one.
    pub fn day(&self) -> Option<i64> {
        days_from_civil(self.date.as_deref()?)
    }

    /// What it was read from: a per-GPU page (each GPU's level), the compatibility matrix
    /// alone, or a page read in part.
    pub fn kind(&self) -> &'static str {
        match (self.complete, self.levels) {
            (false, _) => "page read in part",
            (true, true) => "per-GPU page",
            (true, false) => "compatibility matrix",
        }
    }

    /// How old the list is, for people: `2026-01-21`, or that no date is recorded.
    pub fn dated(&self) -> String {
        self.date.clone().unwrap_or_else(|| "date not recorded".to_string())
    }

    /// `ROCm 6.4.2`, `ROCm 7.0.0, 7.0.1`; a Windows list by its documentation branch, since
    /// which HIP SDK release a branch describes is not said (`Windows docs 6.2.0, 6.2.4`).
    pub fn label(&self) -> String {
        let mut versions = self.versions.clone();
        versions.sort_by_key(|v| version_key(v));
        match self.platform {
            Platform::Linux => format!("ROCm {}", versions.join(", ")),
            Platform::Windows => format!("Windows docs {}", versions.join(", ")),
        }
    }
}

/// One `[[therock]]`: the targets a TheRock release builds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(!deny_unknown_fields)]
pub struct TheRockRelease {
    pub tag: String,
    pub targets: Vec<String>,
    pub source: String,
}

/// One `[[therock_exclusion]]`: projects TheRock does not build for some targets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(!deny_unknown_fields)]
pub struct TheRockExclusion {
    pub targets: Vec<String>,
    pub projects: Vec<String>,
    pub source: String,
}

/// One `[[therock_family]]`: a name TheRock builds and ships a set of targets under.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(!deny_unknown_fields)]
pub struct TheRockFamily {
    pub name: String,
    pub targets: Vec<String>,
    pub source: String,
}

/// One `[[build_filter]]`: the targets a project's build keeps, between two of its tags.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(!deny_unknown_fields)]
pub struct BuildFilter {
    pub project: String,
    /// Which build (`official Linux builds`, `source builds without AMDGPU_TARGETS`).
    pub what: String,
    /// The preset, variable or file that says it.
    pub name: String,
    /// The first tag it holds in, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// The tag that changed it; absent while it holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    /// A regular expression the processor name must match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<String>,
    /// The targets built (target IDs as written).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<String>,
    /// Built for the GPUs of the machine that builds it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub build_host: bool,
    pub source: String,
}

/// What a build filter says of a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kept {
    Yes,
    No,
    /// Kept when the build machine has that GPU.
    OnBuildHost,
    /// Built only for XNACK on (`gfx90a:xnack+`): a GPU in the default mode loads none of it.
    XnackOnly,
}

impl BuildFilter {
    /// Whether the filter keeps `processor` (its regex was checked when the table loaded).
    pub fn keeps(&self, processor: &str) -> Kept {
        if self.build_host {
            return Kept::OnBuildHost;
        }
        if let Some(r) = &self.regex {
            let yes = regex::Regex::new(r).is_ok_and(|re| re.is_match(processor));
            return if yes { Kept::Yes } else { Kept::No };
        }
        // Target IDs: a bare processor, or its xnack- build (the mode GPUs run in by default),
        // serves it; xnack+ alone serves only a GPU running with XNACK on.
        let ids: Vec<&str> = self
            .targets
            .iter()
            .filter(|t| t.split(':').next() == Some(processor))
            .map(|t| t.split_once(':').map_or("", |(_, f)| f))
            .collect();
        match ids.as_slice() {
            [] => Kept::No,
            _ if ids.iter().any(|f| f.is_empty() || f.contains("xnack-")) => Kept::Yes,
            _ => Kept::XnackOnly,
        }
    }

    /// `v0.12.4–v0.30.0`, `v0.31.2–`, or empty when the source gives no tag.
    pub fn span(&self) -> String {
        match (&self.since, &self.until) {
            (Some(a), Some(b)) => format!("{a}–{b}"),
            (Some(a), None) => format!("{a}–"),
            (None, Some(b)) => format!("–{b}"),
            (None, None) => String::new(),
        }
    }
}

/// The policy tables of `targets.toml`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Policy {
    /// ROCm releases, newest first per platform.
    #[serde(default, rename = "release")]
    pub releases: Vec<Release>,
    /// TheRock releases, newest first.
    #[serde(default, rename = "therock")]
    pub therock: Vec<TheRockRelease>,
    #[serde(default, rename = "therock_exclusion")]
    pub therock_exclusions: Vec<TheRockExclusion>,
    #[serde(default, rename = "therock_family")]
    pub therock_families: Vec<TheRockFamily>,
    /// Build filters, newest first within each project's `what`.
    #[serde(default, rename = "build_filter")]
    pub build_filters: Vec<BuildFilter>,
}

/// Runs of releases as people write them: `6.0.0–6.1.2, 6.2.0`.
pub fn spans(runs: &[(String, String)]) -> String {
    let told: Vec<String> =
        runs.iter().map(|(a, b)| if a == b { a.clone() } else { format!("{a}–{b}") }).collect();
    told.join(", ")
}

/// `6.4.2` → [6, 4, 2]; parts that are not numbers count as 0.
pub fn version_key(v: &str) -> Vec<u64> {
    v.split('.').map(|p| p.parse().unwrap_or(0)).collect()
}

/// True for a release or HIP version: `N.N.N` or `N.N.N.N`, each part one to five digits.
pub fn is_version(v: &str) -> bool {
    let parts: Vec<&str> = v.split('.').collect();
    (3..=4).contains(&parts.len())
        && parts.iter().all(|p| (1..=5).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()))
}

impl Policy {
    /// The release list for `version` on `platform` (`6.4.2`; a fourth part is ignored).
    pub fn release(&self, platform: Platform, version: &str) -> Option<&Release> {
        let three: Vec<&str> = version.split('.').take(3).collect();
        let three = three.join(".");
        self.releases.iter().find(|r| r.platform == platform && r.versions.contains(&three))
    }

    /// How `release` lists `target`: its own list's word. A per-GPU page says "if a GPU is not
    /// listed on this table, it's not officially supported by AMD"; the compatibility matrix
    /// says no such thing and leaves GPUs out (gfx906, deprecated, is never in it; gfx1101 was
    /// on the 6.3.0 page, not in the 6.3.x matrix; AMD's Radeon and Ryzen pages list more). So
    /// a target a matrix-only list leaves out is unknown, unless the last per-GPU page before
    /// it listed the target as unsupported: not supported either way.
    pub fn level(&self, release: &Release, target: &str) -> Level {
        let own = release.listed_as(target);
        if own == Level::NotListed && !release.complete {
            return Level::Unknown;
        }
        if release.levels || own != Level::NotListed {
            return own;
        }
        let oldest = |r: &Release| r.versions.iter().map(|v| version_key(v)).min();
        let earlier = self
            .releases
            .iter()
            .filter(|r| r.platform == release.platform && r.levels && oldest(r) < oldest(release))
            .max_by_key(|r| oldest(r));
        match earlier.map(|r| r.listed_as(target)) {
            Some(Level::Unsupported) => Level::NotListed,
            _ => Level::Unknown,
        }
    }

    /// The TheRock release whose version is `version` (`7.11.0` is `therock-7.11`, `7.9.0`
    /// `therock-7.9.0`: TheRock's version.json `rocm-version` at each tag).
    pub fn therock_release(&self, version: &str) -> Option<&TheRockRelease> {
        let want = version_key(version);
        self.therock.iter().find(|r| {
            let mut key = version_key(r.tag.strip_prefix("therock-").unwrap_or(&r.tag));
            key.resize(3, 0);
            want.get(..3) == Some(&key[..])
        })
    }

    /// The Linux releases whose HIP runtime has version `hip` (`6.4.43484`: 6.4.3 and 6.4.2).
    pub fn releases_with_hip(&self, hip: &str) -> Vec<&Release> {
        self.releases
            .iter()
            .filter(|r| r.platform == Platform::Linux && r.hip.as_deref() == Some(hip))
            .collect()
    }

    /// The newest release of `platform` whose version starts `major.minor` as `version` does
    /// (`7.2.53211` and `7.2.3` → the newest 7.2 release listed): for a version of a release
    /// line the table lists, but a build or patch it does not.
    pub fn newest_of_line(&self, platform: Platform, version: &str) -> Option<String> {
        let line: Vec<&str> = version.split('.').take(2).collect();
        let prefix = format!("{}.", line.join("."));
        self.releases
            .iter()
            .filter(|r| r.platform == platform)
            .flat_map(|r| r.versions.iter().filter(|v| v.starts_with(&prefix)))
            .max_by_key(|v| version_key(v))
            .cloned()
    }

    /// The newest release any list of the table is for (`7.2.0`): what a list with no install
    /// to compare with is held against ([`Policy::outdated_for`]).
    pub fn newest_release(&self) -> Option<&String> {
        self.releases.iter().filter_map(Release::newest_version).max_by_key(|v| version_key(v))
    }

    /// True when `release`'s list is older than `reference` (an install's release, else the
    /// newest release known): such a list never blocks a target by leaving it out, since a
    /// newer list nobody recorded may name it.
    pub fn outdated_for(&self, release: &Release, reference: &str) -> bool {
        release.newest_version().is_some_and(|v| version_key(v) < version_key(reference))
    }

    /// The newest list for `platform`.
    pub fn newest(&self, platform: Platform) -> Option<&Release> {
        self.releases
            .iter()
            .filter(|r| r.platform == platform)
            .max_by_key(|r| r.versions.iter().map(|v| version_key(v)).max())
    }

    /// Every list for `platform`, oldest first.
    pub fn history(&self, platform: Platform) -> Vec<&Release> {
        let mut out: Vec<&Release> = self.releases.iter().filter(|r| r.platform == platform).collect();
        out.sort_by_key(|r| r.versions.iter().map(|v| version_key(v)).max());
        out
    }

    /// How the lists of `platform` name `target`, release by release in order, as runs of one
    /// level: (level, first release, last release). A release known only from the
    /// compatibility matrix (no per-GPU page: 6.1.5, 6.3.1 on) names only the targets the
    /// matrix lists, so gfx906 has a gap at 6.1.5: what the sources say, not a guess.
    pub fn runs(&self, platform: Platform, target: &str) -> Vec<(Level, String, String)> {
        let mut all: Vec<(&String, Level)> = self
            .releases
            .iter()
            .filter(|r| r.platform == platform)
            .flat_map(|r| r.versions.iter().map(move |v| (v, self.level(r, target))))
            .collect();
        all.sort_by_key(|(v, _)| version_key(v));
        let mut runs: Vec<(Level, String, String)> = Vec::new();
        for (v, level) in all {
            match runs.last_mut() {
                Some((l, _, end)) if *l == level => *end = v.clone(),
                _ => runs.push((level, v.clone(), v.clone())),
            }
        }
        runs
    }

    /// The releases of `platform` whose list supports `target` (deprecated included), as
    /// runs: `6.0.0–7.2.0`, `6.3.0, 6.4.1–7.2.0`; empty for none.
    pub fn supported_in(&self, platform: Platform, target: &str) -> String {
        let mut out: Vec<(String, String)> = Vec::new();
        let mut open = false;
        for (level, a, b) in self.runs(platform, target) {
            match (level.supported(), open, out.last_mut()) {
                (true, true, Some((_, end))) => *end = b,
                (true, _, _) => out.push((a, b)),
                _ => {}
            }
            open = level.supported();
        }
        spans(&out)
    }

    /// Every broken rule: unknown targets (`known` says which names exist), bad versions,
    /// regexes that do not compile, a filter that is not exactly one of regex, targets or
    /// build host, and two filters in force for one build.
    pub fn errors(&self, known: &dyn Fn(&str) -> bool) -> Vec<String> {
        let mut errs = Vec::new();
        let mut names = |who: &str, list: &[String]| {
            for t in list {
                let processor = t.split(':').next().unwrap_or(t);
                if !known(processor) {
                    errs.push(format!("{who}: target {t:?} is not in the table"));
                }
            }
        };
        for r in &self.releases {
            let who = format!("release {}", r.label());
            for l in [&r.listed, &r.runtime_only, &r.deprecated, &r.unsupported] {
                names(&who, l);
            }
        }
        for t in &self.therock {
            names(&format!("therock {}", t.tag), &t.targets);
        }
        for x in &self.therock_exclusions {
            names("therock_exclusion", &x.targets);
        }
        for f in &self.therock_families {
            names(&format!("therock_family {}", f.name), &f.targets);
        }
        for f in &self.build_filters {
            names(&format!("build_filter {} {}", f.project, f.name), &f.targets);
        }
        for r in &self.releases {
            let who = format!("release {}", r.label());
            if r.versions.is_empty() || !r.versions.iter().all(|v| is_version(v) && v.split('.').count() == 3)
            {
                errs.push(format!("{who}: versions must be N.N.N"));
            }
            let twice = |v: &String| {
                self.releases.iter().filter(|o| o.platform == r.platform && o.versions.contains(v)).count()
                    > 1
            };
            if let Some(v) = r.versions.iter().find(|v| twice(v)) {
                errs.push(format!("{who}: {v} is in two lists of one platform"));
            }
            if r.hip.as_deref().is_some_and(|h| !is_version(h)) {
                errs.push(format!("{who}: hip must be N.N.N"));
            }
            let is_date = |d: &str| {
                let parts: Vec<&str> = d.split('-').collect();
                parts.len() == 3
                    && parts
                        .iter()
                        .zip([4, 2, 2])
                        .all(|(p, n)| p.len() == n && p.bytes().all(|b| b.is_ascii_digit()))
            };
            if r.date.as_deref().is_some_and(|d| !is_date(d)) {
                errs.push(format!("{who}: date must be YYYY-MM-DD"));
            }
        }
        errs.extend(self.order_errors());
        for f in &self.build_filters {
            let who = format!("build_filter {} {}", f.project, f.name);
            let rules = [f.regex.is_some(), !f.targets.is_empty(), f.build_host];
            if rules.iter().filter(|x| **x).count() != 1 {
                errs.push(format!("{who}: give exactly one of regex, targets, build_host"));
            }
            if let Some(Err(e)) = f.regex.as_deref().map(regex::Regex::new) {
                errs.push(format!("{who}: regex does not compile: {e}"));
            }
            let current = |g: &BuildFilter| g.project == f.project && g.what == f.what && g.until.is_none();
            if f.until.is_none() && self.build_filters.iter().filter(|g| current(g)).count() > 1 {
                errs.push(format!("{who}: two filters without `until` for {} {}", f.project, f.what));
            }
        }
        errs
    }
}

impl Policy {
    /// The order the readers rely on: TheRock releases newest first, and each build's filters
    /// newest first (each `until` the `since` of the one before it).
    fn order_errors(&self) -> Vec<String> {
        let mut errs = Vec::new();
        for w in self.therock.windows(2) {
            if tag_key(&w[0].tag) <= tag_key(&w[1].tag) {
                errs.push(format!("therock {}: list TheRock releases newest first", w[1].tag));
            }
        }
        for (i, f) in self.build_filters.iter().enumerate() {
            let next =
                self.build_filters[i + 1..].iter().find(|g| g.project == f.project && g.what == f.what);
            if let Some(g) = next {
                if g.until.is_none() || g.until != f.since {
                    errs.push(format!(
                        "build_filter {} {}: list a build's filters newest first, each `until` the `since` of the one before it",
                        g.project, g.name
                    ));
                }
            }
        }
        errs
    }
}

/// A tag's version, for order: `therock-7.10` → [7, 10], `v0.12.4` → [0, 12, 4].
pub fn tag_key(tag: &str) -> Vec<u64> {
    let at = tag.find(|c: char| c.is_ascii_digit()).unwrap_or(tag.len());
    version_key(&tag[at..])
}

/// Days since 1970-01-01 of a `YYYY-MM-DD` date (the proleptic Gregorian calendar, H. Hinnant's
/// `days_from_civil`), or `None` for anything else.
pub fn days_from_civil(date: &str) -> Option<i64> {
    let mut parts = date.split('-').map(|p| p.parse::<i64>().ok());
    let (y, m, d) = (parts.next()??, parts.next()??, parts.next()??);
    if parts.next().is_some() || !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some(era * 146_097 + doe - 719_468)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::targets::Targets;

    /// Dates count days as the civil calendar does (leap years, the epoch, a century rule).
    #[test]
    fn dates_count_days() {
        assert_eq!(days_from_civil("1970-01-01"), Some(0));
        assert_eq!(days_from_civil("2000-03-01"), Some(11_017));
        assert_eq!(
            days_from_civil("2026-01-21").zip(days_from_civil("2026-07-31")).map(|(a, b)| b - a),
            Some(191)
        );
        assert_eq!(days_from_civil("2026-13-01"), None);
        assert_eq!(days_from_civil("2026-01"), None);
    }

    /// A page read in part names only its rows read: a target it leaves out is unknown there;
    /// a list is held against a newer release only where it leaves a target out.
    #[test]
    fn a_list_read_in_part_and_an_old_list_block_nothing_by_omission() {
        let t = Targets::builtin();
        let p = t.policy();
        let win = p.newest(Platform::Windows).unwrap();
        assert!(!win.complete);
        assert_eq!(p.level(win, "gfx1151"), Level::Unknown);
        assert_eq!(p.level(win, "gfx906"), Level::Unsupported);
        let old = p.release(Platform::Windows, "6.2.4").unwrap();
        assert_eq!(p.level(old, "gfx1151"), Level::NotListed);
        assert!(p.outdated_for(old, "7.2.0") && !p.outdated_for(win, "7.2.0"));
        assert_eq!(p.newest_release().map(String::as_str), Some("7.2.0"));
    }

    #[test]
    fn the_builtin_policy_reads_as_its_sources_say() {
        let t = Targets::builtin();
        let p = t.policy();
        // compat-matrix 7.2.0: nine targets, gfx900 and gfx1031 not among them.
        let newest = p.newest(Platform::Linux).unwrap();
        assert_eq!(newest.versions, ["7.2.0"]);
        assert_eq!(p.level(newest, "gfx1100"), Level::Supported);
        // gfx900 was listed as unsupported on the last per-GPU page: not listed either way.
        assert_eq!(p.level(newest, "gfx900"), Level::NotListed);
        // gfx906 was deprecated there, and the matrix never lists deprecated GPUs: unknown.
        assert_eq!(p.level(newest, "gfx906"), Level::Unknown);
        // gfx1031 was on no page; the matrix alone does not say AMD does not support it.
        assert_eq!(p.level(newest, "gfx1031"), Level::Unknown);
        let r624 = p.release(Platform::Linux, "6.2.4").unwrap();
        assert_eq!(p.level(r624, "gfx1031"), Level::NotListed, "a per-GPU page: not listed is not supported");
        let r631 = p.release(Platform::Linux, "6.3.1").unwrap();
        assert_eq!(p.level(r631, "gfx1101"), Level::Unknown, "on the 6.3.0 page, not in the 6.3.1 matrix");
        // linux-gpus docs/6.2.4: gfx900 ❌, gfx906 ⚠️.
        let r = p.release(Platform::Linux, "6.2.4").unwrap();
        assert_eq!(p.level(r, "gfx900"), Level::Unsupported);
        assert_eq!(p.level(r, "gfx906"), Level::Deprecated);
        // One HIP version, two releases (compat-matrix HIP row).
        let both = p.releases_with_hip("6.4.43484");
        assert_eq!(both.len(), 2);
        // windows-gpus docs/6.2.4: RX 6700 XT runtime only.
        let w = p.release(Platform::Windows, "6.2.4").unwrap();
        assert_eq!(p.level(w, "gfx1031"), Level::RuntimeOnly);
        assert_eq!(p.release(Platform::Linux, "6.4.1.60401").unwrap().versions, ["6.4.1"]);
        assert_eq!(p.supported_in(Platform::Linux, "gfx1100"), "6.0.0–7.2.0");
        assert_eq!(p.therock_release("7.11.0").map(|r| r.tag.as_str()), Some("therock-7.11"));
        assert_eq!(p.therock_release("7.9.0").map(|r| r.tag.as_str()), Some("therock-7.9.0"));
        assert!(p.therock_release("7.2.0").is_none());
        assert_eq!(p.supported_in(Platform::Linux, "gfx1101"), "6.3.0, 6.4.1–7.2.0");
        assert_eq!(p.supported_in(Platform::Linux, "gfx906"), "6.0.0–6.1.2, 6.2.0–6.3.0");
        assert_eq!(p.supported_in(Platform::Linux, "gfx900"), "");
        assert_eq!(p.supported_in(Platform::Windows, "gfx1031"), "6.0.0–6.2.4");
    }

    #[test]
    fn ollamas_filter_keeps_what_its_regex_matches() {
        let t = Targets::builtin();
        let current = t
            .policy()
            .build_filters
            .iter()
            .find(|f| {
                f.project == "Ollama"
                    && f.name == "CMakeLists.txt filter"
                    && f.until.as_deref() == Some("v0.30.0")
            })
            .unwrap();
        assert_eq!(current.keeps("gfx1030"), Kept::Yes);
        assert_eq!(current.keeps("gfx1031"), Kept::No);
        assert_eq!(current.keeps("gfx900"), Kept::No);
        assert_eq!(current.keeps("gfx9000"), Kept::No);
        let preset =
            t.policy().build_filters.iter().find(|f| f.project == "Ollama" && f.until.is_none()).unwrap();
        assert_eq!(preset.keeps("gfx90a"), Kept::Yes, "gfx90a:xnack+ keeps gfx90a");
    }

    #[test]
    fn broken_policy_entries_are_named() {
        let bad = Policy {
            build_filters: vec![BuildFilter {
                project: "p".into(),
                what: "w".into(),
                name: "n".into(),
                since: None,
                until: None,
                regex: Some("(".into()),
                targets: vec!["gfx9999".into()],
                build_host: false,
                source: "s".into(),
            }],
            ..Policy::default()
        };
        let errs = bad.errors(&|n| n == "gfx900");
        let mut reversed = Targets::builtin().policy().clone();
        reversed.therock.reverse();
        reversed.build_filters.reverse();
        let order = reversed.errors(&|_| true);
        assert!(order.iter().any(|e| e.contains("TheRock releases newest first")), "{order:?}");
        assert!(order.iter().any(|e| e.contains("filters newest first")), "{order:?}");
        assert!(errs.iter().any(|e| e.contains("gfx9999")), "{errs:?}");
        assert!(errs.iter().any(|e| e.contains("exactly one")), "{errs:?}");
        assert!(errs.iter().any(|e| e.contains("does not compile")), "{errs:?}");
    }
}
