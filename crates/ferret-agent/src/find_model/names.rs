//! How model file names are compared and turned into search queries: the stem without its
//! extension, the words of a name (separators and camel case split), the tokens that name a
//! variant of the same model (precision, format, pruning, quantisation) rather than another
//! model, and the family of a base model.

/// Tokens that name a variant of the same weights: precision, format, pruning, EMA.
const VARIANT_TOKENS: [&str; 16] = [
    "fp16",
    "fp32",
    "bf16",
    "fp8",
    "e4m3fn",
    "e5m2",
    "scaled",
    "pruned",
    "emaonly",
    "ema",
    "noema",
    "nonema",
    "full",
    "half",
    "safetensors",
    "ckpt",
];

/// The families the finder knows without configuration.
const FAMILIES_TOML: &str = include_str!("families.toml");

/// A family of base models as file names write it and as the hubs name it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ModelFamily {
    /// The word sequences a file name writes the family as (`["sd", "xl"]`, `["sdxl"]`), in
    /// lower case, as the finder splits a name at separators and case changes.
    pub written: Vec<Vec<String>>,
    /// The family as one word of a model's name (`sdxl`), searched on Civitai.
    pub name: String,
    /// Fragments of HuggingFace repository ids naming it (`stable-diffusion-xl`), most
    /// specific first.
    #[serde(default)]
    pub repository: Vec<String>,
}

/// The families the finder recognises in file names: the built-in table
/// (`find_model/families.toml`), and what a configuration adds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelFamilies(Vec<ModelFamily>);

impl Default for ModelFamilies {
    fn default() -> Self {
        #[derive(serde::Deserialize)]
        struct Table {
            family: Vec<ModelFamily>,
        }
        let table: Table = toml::from_str(FAMILIES_TOML)
            .unwrap_or_else(|e| unreachable!("the built-in families table parses: {e}"));
        Self(table.family)
    }
}

impl ModelFamilies {
    /// The built-in families with `added` before them: an added family of a built-in one's
    /// `name` replaces it.
    pub fn with(self, added: Vec<ModelFamily>) -> Self {
        let mut families: Vec<ModelFamily> = self
            .0
            .into_iter()
            .filter(|f| !added.iter().any(|a| a.name == f.name))
            .collect();
        families.splice(0..0, added);
        Self(families)
    }

    /// The families, added ones first.
    pub fn all(&self) -> &[ModelFamily] {
        &self.0
    }

    /// `words` with each family they write replaced by a [`Token::Family`], the longest
    /// written form first.
    fn tokens<'a>(&'a self, words: &'a [String]) -> Vec<Token<'a>> {
        let mut forms: Vec<(&[String], &ModelFamily)> = self
            .0
            .iter()
            .flat_map(|f| f.written.iter().map(move |w| (w.as_slice(), f)))
            .filter(|(w, _)| !w.is_empty())
            .collect();
        forms.sort_by_key(|(w, _)| std::cmp::Reverse(w.len()));
        let mut out = Vec::new();
        let mut i = 0;
        'words: while i < words.len() {
            for (written, family) in &forms {
                let end = i + written.len();
                if end <= words.len() && words[i..end] == **written {
                    out.push(Token::Family(family));
                    i = end;
                    continue 'words;
                }
            }
            out.push(Token::Word(&words[i]));
            i += 1;
        }
        out
    }
}

/// A word of a name, or a family it writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token<'a> {
    Word(&'a str),
    Family(&'a ModelFamily),
}

/// `name` without a model-file extension.
pub(crate) fn stem(name: &str) -> &str {
    match (
        ferret_core::model_file_extension(name),
        name.rsplit_once('.'),
    ) {
        (Some(_), Some((stem, _))) => stem,
        _ => name,
    }
}

/// The lower-case words of `text`: split at anything not a letter or digit, and where case
/// turns to upper after a lower-case letter or a digit (`juggernautXL_v9Rd` → `juggernaut`,
/// `xl`, `v9`, `rd`).
pub(crate) fn words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut previous: Option<char> = None;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            previous = None;
            continue;
        }
        if c.is_uppercase()
            && previous.is_some_and(|p| p.is_lowercase() || p.is_ascii_digit())
            && !current.is_empty()
        {
            words.push(std::mem::take(&mut current));
        }
        current.extend(c.to_lowercase());
        previous = Some(c);
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// True for a quantisation tag's parts (`q4`, `q5_k_m` as `q5`, `k`, `m`, `q8_0`).
fn is_quantisation(word: &str, after_quant: bool) -> bool {
    let quant =
        word.len() >= 2 && word.starts_with('q') && word[1..].chars().all(|c| c.is_ascii_digit());
    quant || (after_quant && matches!(word, "k" | "m" | "s" | "l" | "0" | "1"))
}

/// The words of `name`'s stem with the variant tokens dropped: two files with the same key are
/// the same model in another precision, format or pruning.
fn key_words(name: &str) -> Vec<String> {
    let mut kept = Vec::new();
    let mut after_quant = false;
    for word in stem(name)
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
    {
        if is_quantisation(&word, after_quant) {
            after_quant = true;
            continue;
        }
        after_quant = false;
        if !VARIANT_TOKENS.contains(&word.as_str()) {
            kept.push(word);
        }
    }
    kept
}

/// What identifies `name` across variants and separators: `sd_xl_base_1.0_fp16.safetensors`
/// and `sdxl-base-1.0.ckpt` share it.
pub(crate) fn normalized(name: &str) -> String {
    key_words(name).concat()
}

/// The variant tokens `a` and `b` differ by, for a reason ("fp16", "pruned"); empty when they
/// differ only in separators or case.
pub(crate) fn variant_difference(a: &str, b: &str) -> String {
    let all = |name: &str| -> Vec<String> {
        stem(name)
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    let (a_words, b_words) = (all(a), all(b));
    let mut differ: Vec<String> = a_words
        .iter()
        .filter(|w| !b_words.contains(w))
        .chain(b_words.iter().filter(|w| !a_words.contains(w)))
        .cloned()
        .collect();
    let extension = |name: &str| name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    if extension(a) != extension(b) {
        differ.extend(
            extension(a)
                .into_iter()
                .chain(extension(b))
                .map(|e| format!(".{e}")),
        );
    }
    differ.dedup();
    differ.join(", ")
}

/// The share of `a`'s name words that `b` holds too, from 0 to 1.
pub(crate) fn shared_words(a: &str, b: &str) -> f32 {
    let a_words = key_words(a);
    let b_words = key_words(b);
    if a_words.is_empty() {
        return 0.0;
    }
    let shared = a_words.iter().filter(|w| b_words.contains(w)).count();
    shared as f32 / a_words.len().max(b_words.len()) as f32
}

/// The words that name the model in a name's `words`: families recognised, and without
/// variant tokens (precision, format, pruning), quantisation tags, versions (`v9`) and bare
/// numbers, each once.
fn name_tokens<'a>(words: &'a [String], families: &'a ModelFamilies) -> Vec<Token<'a>> {
    let mut kept: Vec<Token<'a>> = Vec::new();
    let mut after_quant = false;
    for token in families.tokens(words) {
        if let Token::Word(word) = token {
            if is_quantisation(word, after_quant) {
                after_quant = true;
                continue;
            }
            after_quant = false;
            let version = word.len() > 1
                && word.starts_with('v')
                && word[1..].chars().all(|c| c.is_ascii_digit());
            let number = word.chars().all(|c| c.is_ascii_digit());
            if VARIANT_TOKENS.contains(&word) || version || number {
                continue;
            }
        }
        if !kept.contains(&token) {
            kept.push(token);
        }
    }
    kept
}

/// The searches for `name` that Civitai can answer: Civitai's search matches the words of
/// model names, not file names, and a model is often named otherwise than its file
/// (`add-detail-xl.safetensors` is the file of "Detail Tweaker XL"). So: the name's words, then
/// without its first word, then its first two words (a word alone only when it is long enough
/// to be a name), most specific first, families as model names write them.
pub(crate) fn civitai_queries(name: &str, families: &ModelFamilies) -> Vec<String> {
    let words = words(stem(name));
    let tokens: Vec<&str> = name_tokens(&words, families)
        .into_iter()
        .map(|t| match t {
            Token::Word(w) => w,
            Token::Family(f) => f.name.as_str(),
        })
        .collect();
    let mut queries: Vec<String> = Vec::new();
    let mut add = |parts: &[&str]| {
        let query = parts.join(" ");
        if !query.is_empty() && !queries.contains(&query) {
            queries.push(query);
        }
    };
    // A lone word is a query only when it is long enough to name something.
    let names_alone = |word: &str| word.chars().count() >= 5;
    add(&tokens);
    if tokens.len() >= 3 || (tokens.len() == 2 && names_alone(tokens[1])) {
        add(&tokens[1..]);
    }
    if tokens.len() >= 3 {
        add(&tokens[..2]);
    } else if tokens.len() == 2 && names_alone(tokens[0]) {
        add(&tokens[..1]);
    }
    queries
}

/// The searches for `name` that the HuggingFace Hub can answer: its search matches substrings
/// of repository ids (`owner/name`), not the files inside. So: fragments a repository named
/// after the model would hold, the name's words joined by `-` with families as repositories
/// name them (`sd_xl_base_1.0` → `stable-diffusion-xl-base`, `sdxl-base`), then shorter
/// prefixes (`control-lora-canny-rank256` → `control-lora`), most specific first; the files of
/// each repository found are then listed and compared.
pub(crate) fn huggingface_fragments(name: &str, families: &ModelFamilies) -> Vec<String> {
    let words = words(stem(name));
    let tokens = name_tokens(&words, families);
    if tokens.is_empty() {
        return Vec::new();
    }
    // Each token's spellings in a repository id: a family's fragments, a word itself.
    let spellings: Vec<Vec<&str>> = tokens
        .iter()
        .map(|t| match t {
            Token::Word(w) => vec![*w],
            Token::Family(f) if f.repository.is_empty() => vec![f.name.as_str()],
            Token::Family(f) => f.repository.iter().map(String::as_str).collect(),
        })
        .collect();
    // A repository is most often named after the model, its first words, while the file adds
    // qualifiers (a step count, a rank, a precision): the whole name first, then its first two
    // words in each spelling, then the first alone, then the prefixes between.
    let short_word = matches!(tokens.first(), Some(Token::Word(w)) if w.chars().count() < 5);
    let mut lengths = vec![spellings.len()];
    lengths.extend([2, 1].into_iter().filter(|&n| n < spellings.len()));
    lengths.extend((3..spellings.len()).rev());
    let mut fragments: Vec<String> = Vec::new();
    for (round, length) in lengths.into_iter().enumerate() {
        // A lone word is a fragment only when it is long enough to name something.
        if length == 1 && spellings.len() > 1 && short_word {
            continue;
        }
        // The whole name in its first spelling only: the prefixes carry the others.
        let width = if round == 0 && length > 2 {
            1
        } else {
            spellings[..length].iter().map(Vec::len).max().unwrap_or(1)
        };
        for choice in 0..width {
            let fragment = spellings[..length]
                .iter()
                .map(|s| s[choice.min(s.len() - 1)])
                .collect::<Vec<_>>()
                .join("-");
            if !fragments.contains(&fragment) {
                fragments.push(fragment);
            }
        }
    }
    fragments
}

/// The base model `name` says (a checkpoint's file name, a hub's base model) as a label the
/// finder's base-model rule reads: "SDXL" for `sd_xl_base_1.0.safetensors` or `Pony`, "SD 1.5"
/// for `v1-5-pruned-emaonly.safetensors`, "Flux" for `flux1-dev.safetensors`; `None` when the
/// name does not say.
pub fn base_model_label(name: &str) -> Option<&'static str> {
    Some(match base_family(name)? {
        "sdxl" => "SDXL",
        "sd1" => "SD 1.5",
        "sd2" => "SD 2",
        "sd3" => "SD 3",
        "flux" => "Flux",
        "wan" => "Wan 2",
        "hunyuan" => "Hunyuan",
        _ => return None,
    })
}

/// The family a base model belongs to ("SDXL 1.0", "Pony" and
/// "stabilityai/stable-diffusion-xl-base-1.0" are all `sdxl`); `None` when it is not known.
pub(crate) fn base_family(base: &str) -> Option<&'static str> {
    let flat: String = base
        .to_lowercase()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    let has = |part: &str| flat.contains(part);
    let family = if has("flux") {
        "flux"
    } else if has("sd3") || has("stablediffusion3") {
        "sd3"
    } else if has("pony") || has("illustrious") || has("xl") {
        // Pony and Illustrious are trained from SDXL, and load its LoRAs and VAEs.
        "sdxl"
    } else if has("sd15") || has("v15") || has("sd1") || has("stablediffusionv1") {
        "sd1"
    } else if has("sd2") || has("stablediffusion2") {
        "sd2"
    } else if has("wan") && has("2") {
        "wan"
    } else if has("hunyuan") {
        "hunyuan"
    } else {
        return None;
    };
    Some(family)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_of_one_model_share_a_normalised_name() {
        assert_eq!(
            normalized("sd_xl_base_1.0_fp16.safetensors"),
            normalized("sd-xl-base-1.0.ckpt")
        );
        assert_eq!(
            normalized("v1-5-pruned-emaonly.safetensors"),
            normalized("v1-5.safetensors")
        );
        assert_eq!(
            normalized("flux1-dev-Q4_K_S.gguf"),
            normalized("flux1-dev.safetensors")
        );
        assert_ne!(
            normalized("add-detail-xl.safetensors"),
            normalized("add_detail.safetensors")
        );
        assert_eq!(
            variant_difference("sdxl_vae_fp16.safetensors", "sdxl_vae.safetensors"),
            "fp16"
        );
    }

    #[test]
    fn civitai_is_searched_by_the_words_a_model_name_holds() {
        let families = ModelFamilies::default();
        let civitai = |name| civitai_queries(name, &families);
        assert_eq!(
            civitai("add-detail-xl.safetensors"),
            ["add detail xl", "detail xl", "add detail"]
        );
        assert_eq!(
            civitai("juggernautXL_v9Rdphoto2Lightning.safetensors"),
            [
                "juggernaut xl rdphoto2 lightning",
                "xl rdphoto2 lightning",
                "juggernaut xl"
            ]
        );
        assert_eq!(civitai("sd_xl_base_1.0_fp16.safetensors"), ["sdxl base"]);
        assert_eq!(
            civitai("4xUltrasharp_4xUltrasharpV10.pt"),
            ["4x ultrasharp", "ultrasharp"]
        );
        assert_eq!(civitai("dreamshaper_8.safetensors"), ["dreamshaper"]);
    }

    #[test]
    fn the_hub_is_searched_by_fragments_of_repository_ids() {
        let families = ModelFamilies::default();
        let hub = |name| huggingface_fragments(name, &families);
        assert_eq!(
            hub("sd_xl_base_1.0.safetensors"),
            [
                "stable-diffusion-xl-base",
                "sdxl-base",
                "stable-diffusion-xl",
                "sdxl"
            ]
        );
        assert_eq!(
            hub("control-lora-canny-rank256.safetensors"),
            [
                "control-lora-canny-rank256",
                "control-lora",
                "control",
                "control-lora-canny"
            ]
        );
        assert_eq!(
            hub("sdxl_lightning_4step_lora.safetensors")[..3],
            [
                "stable-diffusion-xl-lightning-4step-lora",
                "stable-diffusion-xl-lightning",
                "sdxl-lightning"
            ]
        );
        assert_eq!(
            hub("v1-5-pruned-emaonly.safetensors"),
            ["stable-diffusion-v1-5", "sd15"]
        );
        assert_eq!(hub("flux1-dev.safetensors")[0], "flux.1-dev");
        assert_eq!(hub("RealESRGAN_x4plus.pth")[0], "real-esrgan-x4plus");
    }

    #[test]
    fn names_with_spaces_or_unicode_give_queries_in_their_words() {
        let families = ModelFamilies::default();
        let name = "Détail Tweaker ✨ XL v2.safetensors";
        assert_eq!(
            civitai_queries(name, &families),
            ["détail tweaker xl", "tweaker xl", "détail tweaker"]
        );
        assert_eq!(
            huggingface_fragments(name, &families)[..2],
            ["détail-tweaker-xl", "détail-tweaker"]
        );
        // Nothing searchable left: no query rather than an empty one.
        assert!(civitai_queries("✨✨.safetensors", &families).is_empty());
        assert!(huggingface_fragments("v2_fp16.safetensors", &families).is_empty());
    }

    #[test]
    fn families_added_by_a_configuration_come_first_and_replace_by_name() {
        let pony = ModelFamily {
            written: vec![vec!["pony".into(), "diffusion".into()]],
            name: "pony".into(),
            repository: vec!["pony-diffusion".into()],
        };
        let families = ModelFamilies::default().with(vec![pony]);
        assert_eq!(families.all()[0].name, "pony");
        assert_eq!(
            huggingface_fragments("ponyDiffusionV6XL.safetensors", &families)[0],
            "pony-diffusion-xl"
        );
        let replaced = ModelFamilies::default().with(vec![ModelFamily {
            written: vec![vec!["sdxl".into()]],
            name: "sdxl".into(),
            repository: Vec::new(),
        }]);
        assert_eq!(
            replaced.all().iter().filter(|f| f.name == "sdxl").count(),
            1
        );
    }

    #[test]
    fn a_checkpoints_name_says_its_base_model_when_it_can() {
        assert_eq!(base_model_label("sd_xl_base_1.0.safetensors"), Some("SDXL"));
        assert_eq!(
            base_model_label("v1-5-pruned-emaonly.safetensors"),
            Some("SD 1.5")
        );
        assert_eq!(base_model_label("flux1-dev-Q4_K_S.gguf"), Some("Flux"));
        assert_eq!(base_model_label("dreamshaper_8.safetensors"), None);
        // Each label reads back as its own family.
        for label in ["SDXL", "SD 1.5", "SD 2", "SD 3", "Flux", "Wan 2", "Hunyuan"] {
            assert_eq!(base_model_label(label), Some(label));
        }
    }

    #[test]
    fn base_models_fall_into_families() {
        assert_eq!(base_family("SDXL 1.0"), Some("sdxl"));
        assert_eq!(base_family("Pony"), Some("sdxl"));
        assert_eq!(
            base_family("stabilityai/stable-diffusion-xl-base-1.0"),
            Some("sdxl")
        );
        assert_eq!(base_family("SD 1.5"), Some("sd1"));
        assert_eq!(base_family("runwayml/stable-diffusion-v1-5"), Some("sd1"));
        assert_eq!(base_family("Flux.1 D"), Some("flux"));
        assert_eq!(base_family("Other"), None);
    }
}
