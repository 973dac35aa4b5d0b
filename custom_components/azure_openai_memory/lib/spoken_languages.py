"""Spoken time ranges in German, French, Dutch, Spanish and Italian, said in English words.

Each language's phrases are rewritten into the English ones spoken_time reads, so every
language follows the same rules: calendar words ("gestern", "la semaine dernière", "vorige
week") mean those local days, weeks and months; "the last N units" ("in den letzten zwei
Tagen", "les trois derniers jours") a span up to now; "N units ago" ("vor zwei Tagen", "il y
a deux jours", "twee dagen geleden", "hace dos días", "due giorni fa") that day, week or
month; weekdays, months, parts of the day and number words as in English. A language's
"last week" said without an article is the calendar week before this one, as in English;
said with one ("die letzte Woche", "la dernière semaine", "de afgelopen week", "la última
semana", "l'ultima settimana") the seven days up to now.
"""

from collections.abc import Callable, Mapping
import re

type _Replacement = str | Callable[[re.Match[str]], str]
type _Rule = tuple[re.Pattern[str], _Replacement]

# A number as the rewritten text holds it: digits, or English's vague amounts.
_NUM = r"\d+(?:\.\d+)?|a few|a couple of"


def _alternatives(words: Mapping[str, object] | list[str]) -> str:
    """Longest first, so that "vierzehn" is not read as "vier"."""
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


def _words(table: Mapping[str, str]) -> _Rule:
    """Each whole word (or phrase) of table by its English."""
    return re.compile(rf"(?<!\w)(?:{_alternatives(table)})(?!\w)"), lambda m: table[m[0]]


def _rule(pattern: str, replacement: _Replacement) -> _Rule:
    return re.compile(pattern), replacement


def _numbers(small: Mapping[str, int], tens: Mapping[str, int], joined: str) -> list[_Rule]:
    """Number words as digits: tens with their units (joined: how a language joins them,
    "{unit}und{ten}" or "{ten}-{unit}"), tens alone, then the small ones."""
    units = {w: n for w, n in small.items() if n < 10}
    pattern = joined.format(
        unit=f"(?P<unit>{_alternatives(units)})", ten=f"(?P<ten>{_alternatives(tens)})"
    )
    return [
        _rule(rf"(?<!\w)(?:{pattern})(?!\w)", lambda m: str(tens[m["ten"]] + units[m["unit"]])),
        _words({w: str(n) for w, n in tens.items()}),
        _words({w: str(n) for w, n in small.items()}),
    ]


def _decimal_comma() -> _Rule:
    return _rule(r"(\d),(\d)", r"\1.\2")


_DE_SMALL = {
    "eins": 1, "ein": 1, "eine": 1, "einer": 1, "einem": 1, "einen": 1, "zwei": 2,
    "drei": 3, "vier": 4, "fünf": 5, "sechs": 6, "sieben": 7, "acht": 8, "neun": 9,
    "zehn": 10, "elf": 11, "zwölf": 12, "dreizehn": 13, "vierzehn": 14, "fünfzehn": 15,
    "sechzehn": 16, "siebzehn": 17, "achtzehn": 18, "neunzehn": 19,
}  # fmt: skip
_DE_TENS = {
    "zwanzig": 20, "dreißig": 30, "dreissig": 30, "vierzig": 40, "fünfzig": 50,
    "sechzig": 60, "siebzig": 70, "achtzig": 80, "neunzig": 90,
}  # fmt: skip
_DE_PARTS = {"morgen": "morning", "früh": "morning", "vormittag": "morning",
             "nachmittag": "afternoon", "abend": "evening", "nacht": "night"}  # fmt: skip
_GERMAN: tuple[_Rule, ...] = (
    _decimal_comma(),
    _words(
        {
            "vorgestern": "the day before yesterday",
            "letzte nacht": "last night",
            "vergangene nacht": "last night",
            "heute nacht": "tonight",
            "heute morgen": "this morning",
            "heute früh": "this morning",
            "heute vormittag": "this morning",
            "heute nachmittag": "this afternoon",
            "heute abend": "this evening",
        }
    ),  # fmt: skip
    _rule(
        rf"(?<!\w)(gestern|yesterday)\s+({_alternatives(_DE_PARTS)})(?!\w)",
        lambda m: f"yesterday {_DE_PARTS[m[2]]}",
    ),
    _words({"gestern": "yesterday", "heute": "today"}),
    _words({"ein paar": "a few", "paar": "few", "einige": "few", "ein halb": "0.5"}),
    *_numbers(_DE_SMALL, _DE_TENS, "{unit}und{ten}"),
    _words(
        {
            "sekunde": "second",
            "sekunden": "seconds",
            "minute": "minute",
            "minuten": "minutes",
            "stunde": "hour",
            "stunden": "hours",
            "std": "hours",
            "tag": "day",
            "tage": "days",
            "tagen": "days",
            "woche": "week",
            "wochen": "weeks",
            "monat": "month",
            "monate": "months",
            "monaten": "months",
            "jahr": "year",
            "jahre": "years",
            "jahren": "years",
            "wochenende": "weekend",
        }
    ),  # fmt: skip
    _rule(rf"(?<!\w)vor\s+({_NUM})\s+(days?|weeks?|months?|years?)(?!\w)", r"\1 \2 ago"),
    # With an article: a span up to now ("in der letzten Woche"); without, the calendar's.
    _rule(
        r"(?<!\w)(?:(?:in|während|innerhalb)\s+)?(?:den|die|der)\s+"
        r"(?:letzten|letzte|vergangenen|vergangene|vorigen)\s+",
        "the last ",
    ),
    _words(
        {
            "letzten": "last",
            "letzte": "last",
            "letzter": "last",
            "letztes": "last",
            "vergangenen": "last",
            "vergangene": "last",
            "vergangenes": "last",
            "vorigen": "last",
            "vorige": "last",
            "voriges": "last",
            "voriger": "last",
            "diese": "this",
            "diesen": "this",
            "dieses": "this",
            "dieser": "this",
            "nächsten": "next",
            "nächster": "next",
            "nächste": "next",
            "kommenden": "coming",
            "kommender": "coming",
            "jeden": "every",
            "am": "on",
            "im": "in",
            "seit": "since",
        }
    ),  # fmt: skip
    _words(
        {
            "montag": "monday",
            "dienstag": "tuesday",
            "mittwoch": "wednesday",
            "donnerstag": "thursday",
            "freitag": "friday",
            "samstag": "saturday",
            "sonnabend": "saturday",
            "sonntag": "sunday",
            "januar": "january",
            "jänner": "january",
            "februar": "february",
            "märz": "march",
            "maerz": "march",
            "april": "april",
            "mai": "may",
            "juni": "june",
            "juli": "july",
            "august": "august",
            "september": "september",
            "oktober": "october",
            "november": "november",
            "dezember": "december",
        }
    ),  # fmt: skip
)

_FR_SMALL = {
    "un": 1, "une": 1, "deux": 2, "trois": 3, "quatre": 4, "cinq": 5, "six": 6,
    "sept": 7, "huit": 8, "neuf": 9, "dix": 10, "onze": 11, "douze": 12, "treize": 13,
    "quatorze": 14, "quinze": 15, "seize": 16, "dix-sept": 17, "dix-huit": 18,
    "dix-neuf": 19,
}  # fmt: skip
_FR_TENS = {"vingt": 20, "trente": 30, "quarante": 40, "cinquante": 50, "soixante": 60}
_FR_MONTHS = {
    "janvier": "january", "février": "february", "fevrier": "february", "mars": "march",
    "avril": "april", "mai": "may", "juin": "june", "juillet": "july", "août": "august",
    "aout": "august", "septembre": "september", "octobre": "october",
    "novembre": "november", "décembre": "december", "decembre": "december",
}  # fmt: skip
_FR_DAYS = {
    "lundi": "monday", "mardi": "tuesday", "mercredi": "wednesday", "jeudi": "thursday",
    "vendredi": "friday", "samedi": "saturday", "dimanche": "sunday",
}  # fmt: skip
_FR_UNITS = r"seconds?|minutes?|hours?|days?|weeks?|months?|years?"
_FRENCH: tuple[_Rule, ...] = (
    _decimal_comma(),
    _words(
        {
            "avant-hier": "the day before yesterday",
            "avant hier": "the day before yesterday",
            "la nuit dernière": "last night",
            "cette nuit": "tonight",
            "ce matin": "this morning",
            "cet après-midi": "this afternoon",
            "cet aprem": "this afternoon",
            "ce soir": "this evening",
            "hier matin": "yesterday morning",
            "hier après-midi": "yesterday afternoon",
            "hier soir": "yesterday evening",
            "hier": "yesterday",
            "aujourd'hui": "today",
            "cette semaine": "this week",
            "ce mois-ci": "this month",
            "ce mois": "this month",
            "cette année": "this year",
            "la semaine dernière": "last week",
            "la semaine passée": "last week",
            "le mois dernier": "last month",
            "le mois passé": "last month",
            "l'année dernière": "last year",
            "l'an dernier": "last year",
            "l'année passée": "last year",
            "le week-end dernier": "last weekend",
            "le weekend dernier": "last weekend",
            "ce week-end": "this weekend",
            "ce weekend": "this weekend",
        }
    ),  # fmt: skip
    _words({"quelques": "a few", "une quinzaine de": "a fortnight of"}),
    _rule(
        r"(?<!\w)(vingt|trente|quarante|cinquante|soixante)\s+et\s+(un|une)(?!\w)",
        lambda m: str(_FR_TENS[m[1]] + 1),
    ),  # fmt: skip
    *_numbers(_FR_SMALL, _FR_TENS, "{ten}-{unit}"),
    _words(
        {
            "seconde": "second",
            "secondes": "seconds",
            "minute": "minute",
            "minutes": "minutes",
            "heure": "hour",
            "heures": "hours",
            "jour": "day",
            "jours": "days",
            "journée": "day",
            "journées": "days",
            "semaine": "week",
            "semaines": "weeks",
            "mois": "months",
            "an": "year",
            "ans": "years",
            "année": "year",
            "années": "years",
        }
    ),  # fmt: skip
    _rule(rf"(?<!\w)il\s+y\s+a\s+({_NUM})\s+(days?|weeks?|months?|years?)(?!\w)", r"\1 \2 ago"),
    # "les deux derniers jours", "ces dernières 24 heures", "la dernière semaine": spans.
    _rule(
        rf"(?<!\w)(?:(?:dans|pendant|durant|sur|depuis)\s+)?(?:les|ces|des|au\s+cours\s+des)\s+"
        rf"({_NUM})\s+(?:derniers|dernières|dernieres|passés|passées)\s+({_FR_UNITS})(?!\w)",
        r"the last \1 \2",
    ),
    _rule(
        rf"(?<!\w)(?:(?:dans|pendant|durant|sur)\s+)?(?:les|ces|au\s+cours\s+des)\s+"
        rf"(?:derniers|dernières|dernieres)\s+({_NUM})\s+({_FR_UNITS})(?!\w)",
        r"the last \1 \2",
    ),
    _rule(
        rf"(?<!\w)(?:(?:dans|pendant|durant|sur|depuis)\s+)?(?:les|ces)\s+"
        rf"(?:derniers|dernières|dernieres)\s+({_FR_UNITS})(?!\w)",
        r"the last few \1",
    ),
    _rule(
        rf"(?<!\w)(?:(?:dans|pendant|durant|sur|au\s+cours\s+de)\s+)?(?:la|le|l')\s*"
        rf"(?:dernière|derniere|dernier)\s+({_FR_UNITS})(?!\w)",
        r"the last \1",
    ),
    _rule(
        rf"(?<!\w)(?:la|le|l')\s*({_FR_UNITS})\s+(?:écoulée|écoulé|ecoulee|ecoule)(?!\w)",
        r"the past \1",
    ),
    _rule(
        rf"(?<!\w)({_alternatives(_FR_DAYS)})\s+(dernier|passé)(?!\w)",
        lambda m: f"last {_FR_DAYS[m[1]]}",
    ),  # fmt: skip
    _rule(
        rf"(?<!\w)({_alternatives(_FR_DAYS)})\s+prochain(?!\w)", lambda m: f"next {_FR_DAYS[m[1]]}"
    ),  # fmt: skip
    _rule(
        rf"(?<!\w)(?:tous\s+les|chaque)\s+({_alternatives(_FR_DAYS)})s?(?!\w)",
        lambda m: f"every {_FR_DAYS[m[1]]}",
    ),  # fmt: skip
    _rule(
        rf"(?<!\w)({_alternatives(_FR_MONTHS)})\s+(?:dernier|passé)(?!\w)",
        lambda m: f"last {_FR_MONTHS[m[1]]}",
    ),  # fmt: skip
    _words({"depuis": "since", "en": "in"}),
    _words({**_FR_DAYS, **_FR_MONTHS}),
)

_NL_SMALL = {
    "een": 1, "één": 1, "twee": 2, "drie": 3, "vier": 4, "vijf": 5, "zes": 6,
    "zeven": 7, "acht": 8, "negen": 9, "tien": 10, "elf": 11, "twaalf": 12,
    "dertien": 13, "veertien": 14, "vijftien": 15, "zestien": 16, "zeventien": 17,
    "achttien": 18, "negentien": 19,
}  # fmt: skip
_NL_TENS = {"twintig": 20, "dertig": 30, "veertig": 40, "vijftig": 50, "zestig": 60}
_DUTCH: tuple[_Rule, ...] = (
    _decimal_comma(),
    _words(
        {
            "eergisteren": "the day before yesterday",
            "gisteravond": "yesterday evening",
            "gisterenavond": "yesterday evening",
            "gistermorgen": "yesterday morning",
            "gisterochtend": "yesterday morning",
            "gistermiddag": "yesterday afternoon",
            "gisternacht": "last night",
            "afgelopen nacht": "last night",
            "vannacht": "tonight",
            "vanochtend": "this morning",
            "vanmorgen": "this morning",
            "vanmiddag": "this afternoon",
            "vanavond": "this evening",
            "gisteren": "yesterday",
            "vandaag": "today",
        }
    ),  # fmt: skip
    _words(
        {"een paar": "a couple of", "paar": "couple of", "enkele": "a few", "een aantal": "a few"}
    ),  # fmt: skip
    _rule(
        r"(?<!\w)(een|één|twee|drie|vier|vijf|zes|zeven|acht|negen)(?:en|ën)"
        r"(twintig|dertig|veertig|vijftig|zestig)(?!\w)",
        lambda m: str(_NL_TENS[m[2]] + _NL_SMALL[m[1]]),
    ),  # fmt: skip
    *_numbers(_NL_SMALL, _NL_TENS, "{unit}en{ten}"),
    _words(
        {
            "seconde": "second",
            "seconden": "seconds",
            "minuut": "minute",
            "minuten": "minutes",
            "uur": "hours",
            "uren": "hours",
            "dag": "day",
            "dagen": "days",
            "week": "week",
            "weken": "weeks",
            "maand": "month",
            "maanden": "months",
            "jaar": "year",
            "jaren": "years",
            "weekend": "weekend",
        }
    ),  # fmt: skip
    _rule(rf"(?<!\w)({_NUM})\s+(days?|weeks?|months?|years?)\s+geleden(?!\w)", r"\1 \2 ago"),
    # With the article: a span up to now ("de afgelopen week"); without, the calendar's.
    _rule(
        r"(?<!\w)(?:(?:in|tijdens|gedurende)\s+)?de\s+(?:afgelopen|laatste|voorbije)\s+",
        "the last ",
    ),  # fmt: skip
    _words(
        {
            "vorige": "last",
            "vorig": "last",
            "verleden": "last",
            "afgelopen": "last",
            "deze": "this",
            "dit": "this",
            "volgende": "next",
            "komende": "coming",
            "elke": "every",
            "iedere": "every",
            "op": "on",
            "sinds": "since",
            "sedert": "since",
        }
    ),  # fmt: skip
    _words(
        {
            "maandag": "monday",
            "dinsdag": "tuesday",
            "woensdag": "wednesday",
            "donderdag": "thursday",
            "vrijdag": "friday",
            "zaterdag": "saturday",
            "zondag": "sunday",
            "januari": "january",
            "februari": "february",
            "maart": "march",
            "april": "april",
            "mei": "may",
            "juni": "june",
            "juli": "july",
            "augustus": "august",
            "september": "september",
            "oktober": "october",
            "november": "november",
            "december": "december",
        }
    ),  # fmt: skip
)

_ES_SMALL = {
    "un": 1, "uno": 1, "una": 1, "dos": 2, "tres": 3, "cuatro": 4, "cinco": 5,
    "seis": 6, "siete": 7, "ocho": 8, "nueve": 9, "diez": 10, "once": 11, "doce": 12,
    "trece": 13, "catorce": 14, "quince": 15, "dieciséis": 16, "dieciseis": 16,
    "diecisiete": 17, "dieciocho": 18, "diecinueve": 19, "veintiuno": 21, "veintiún": 21,
    "veintiuna": 21, "veintidós": 22, "veintidos": 22, "veintitrés": 23, "veintitres": 23,
    "veinticuatro": 24, "veinticinco": 25, "veintiséis": 26, "veintiseis": 26,
    "veintisiete": 27, "veintiocho": 28, "veintinueve": 29,
}  # fmt: skip
_ES_TENS = {"veinte": 20, "treinta": 30, "cuarenta": 40, "cincuenta": 50, "sesenta": 60}
_ES_DAYS = {
    "lunes": "monday", "martes": "tuesday", "miércoles": "wednesday",
    "miercoles": "wednesday", "jueves": "thursday", "viernes": "friday",
    "sábado": "saturday", "sabado": "saturday", "domingo": "sunday",
}  # fmt: skip
_ES_MONTHS = {
    "enero": "january", "febrero": "february", "marzo": "march", "abril": "april",
    "mayo": "may", "junio": "june", "julio": "july", "agosto": "august",
    "septiembre": "september", "setiembre": "september", "octubre": "october",
    "noviembre": "november", "diciembre": "december",
}  # fmt: skip
_ES_UNITS = r"seconds?|minutes?|hours?|days?|weeks?|months?|years?"
_SPANISH: tuple[_Rule, ...] = (
    _decimal_comma(),
    _words(
        {
            "anteayer": "the day before yesterday",
            "antes de ayer": "the day before yesterday",
            "antier": "the day before yesterday",
            "anoche": "last night",
            "ayer por la noche": "yesterday evening",
            "ayer por la mañana": "yesterday morning",
            "ayer por la tarde": "yesterday afternoon",
            "ayer": "yesterday",
            "hoy": "today",
            "esta mañana": "this morning",
            "esta tarde": "this afternoon",
            "esta noche": "tonight",
            "esta semana": "this week",
            "este mes": "this month",
            "este año": "this year",
            "la semana pasada": "last week",
            "el mes pasado": "last month",
            "el año pasado": "last year",
            "el fin de semana pasado": "last weekend",
            "este fin de semana": "this weekend",
        }
    ),  # fmt: skip
    _words(
        {
            "un par de": "a couple of",
            "unos pocos": "a few",
            "unas pocas": "a few",
            "unos cuantos": "a few",
            "unas cuantas": "a few",
        }
    ),  # fmt: skip
    _rule(
        r"(?<!\w)(treinta|cuarenta|cincuenta|sesenta)\s+y\s+(uno|una|un)(?!\w)",
        lambda m: str(_ES_TENS[m[1]] + 1),
    ),  # fmt: skip
    *_numbers(_ES_SMALL, _ES_TENS, "{ten} y {unit}"),
    _words(
        {
            "segundo": "second",
            "segundos": "seconds",
            "minuto": "minute",
            "minutos": "minutes",
            "hora": "hour",
            "horas": "hours",
            "día": "day",
            "dia": "day",
            "días": "days",
            "dias": "days",
            "semana": "week",
            "semanas": "weeks",
            "mes": "month",
            "meses": "months",
            "año": "year",
            "años": "years",
            "quincena": "fortnight",
        }
    ),  # fmt: skip
    _rule(rf"(?<!\w)hace\s+({_NUM})\s+(days?|weeks?|months?|years?)(?!\w)", r"\1 \2 ago"),
    _rule(
        rf"(?<!\w)(?:(?:en|durante)\s+)?(?:los|las|estos|estas)\s+(?:últimos|últimas|ultimos|"
        rf"ultimas|pasados|pasadas)\s+({_NUM})\s+({_ES_UNITS})(?!\w)",
        r"the last \1 \2",
    ),
    _rule(
        rf"(?<!\w)(?:(?:en|durante)\s+)?(?:los|las|estos|estas)\s+(?:últimos|últimas|ultimos|"
        rf"ultimas)\s+({_ES_UNITS})(?!\w)",
        r"the last few \1",
    ),
    _rule(
        rf"(?<!\w)(?:(?:en|durante)\s+)?(?:la|el)\s+(?:última|último|ultima|ultimo)\s+"
        rf"({_ES_UNITS})(?!\w)",
        r"the last \1",
    ),
    _rule(
        rf"(?<!\w)(?:el\s+)?({_alternatives(_ES_DAYS)})\s+pasado(?!\w)",
        lambda m: f"last {_ES_DAYS[m[1]]}",
    ),  # fmt: skip
    _rule(
        rf"(?<!\w)(?:el\s+)?(?:próximo|proximo)\s+({_alternatives(_ES_DAYS)})(?!\w)",
        lambda m: f"next {_ES_DAYS[m[1]]}",
    ),  # fmt: skip
    _rule(
        rf"(?<!\w)(?:el\s+)?({_alternatives(_ES_DAYS)})\s+que\s+viene(?!\w)",
        lambda m: f"next {_ES_DAYS[m[1]]}",
    ),  # fmt: skip
    _rule(
        rf"(?<!\w)(?:cada|todos\s+los)\s+({_alternatives(_ES_DAYS)})(?!\w)",
        lambda m: f"every {_ES_DAYS[m[1]]}",
    ),  # fmt: skip
    _rule(
        rf"(?<!\w)(?:el\s+pasado\s+({_alternatives(_ES_MONTHS)})|"
        rf"({_alternatives(_ES_MONTHS)})\s+pasado)(?!\w)",
        lambda m: f"last {_ES_MONTHS[m[1] or m[2]]}",
    ),  # fmt: skip
    _words({"desde": "since", "en": "in"}),
    _words({**_ES_DAYS, **_ES_MONTHS}),
)

_IT_SMALL = {
    "un": 1, "uno": 1, "una": 1, "un'": 1, "due": 2, "tre": 3, "quattro": 4,
    "cinque": 5, "sei": 6, "sette": 7, "otto": 8, "nove": 9, "dieci": 10, "undici": 11,
    "dodici": 12, "tredici": 13, "quattordici": 14, "quindici": 15, "sedici": 16,
    "diciassette": 17, "diciotto": 18, "diciannove": 19,
}  # fmt: skip
_IT_TENS = {"venti": 20, "trenta": 30, "quaranta": 40, "cinquanta": 50, "sessanta": 60}
_IT_COMPOUND = {
    f"{stem}{unit}": ten + n
    for stem, ten in (("vent", 20), ("trent", 30), ("quarant", 40), ("cinquant", 50))
    for unit, n in (("uno", 1), ("otto", 8))
} | {
    f"{word}{unit}": ten + n
    for word, ten in _IT_TENS.items()
    for unit, n in (("due", 2), ("tré", 3), ("tre", 3), ("quattro", 4), ("cinque", 5),
                    ("sei", 6), ("sette", 7), ("nove", 9))
}  # fmt: skip
_IT_DAYS = {
    "lunedì": "monday", "lunedi": "monday", "martedì": "tuesday", "martedi": "tuesday",
    "mercoledì": "wednesday", "mercoledi": "wednesday", "giovedì": "thursday",
    "giovedi": "thursday", "venerdì": "friday", "venerdi": "friday",
    "sabato": "saturday", "domenica": "sunday",
}  # fmt: skip
_IT_MONTHS = {
    "gennaio": "january", "febbraio": "february", "marzo": "march", "aprile": "april",
    "maggio": "may", "giugno": "june", "luglio": "july", "agosto": "august",
    "settembre": "september", "ottobre": "october", "novembre": "november",
    "dicembre": "december",
}  # fmt: skip
_IT_UNITS = r"seconds?|minutes?|hours?|days?|weeks?|months?|years?"
_ITALIAN: tuple[_Rule, ...] = (
    _decimal_comma(),
    _words(
        {
            "l'altro ieri": "the day before yesterday",
            "l'altroieri": "the day before yesterday",
            "altroieri": "the day before yesterday",
            "ieri l'altro": "the day before yesterday",
            "la notte scorsa": "last night",
            "ieri notte": "last night",
            "stanotte": "tonight",
            "stamattina": "this morning",
            "stamani": "this morning",
            "questa mattina": "this morning",
            "oggi pomeriggio": "this afternoon",
            "questo pomeriggio": "this afternoon",
            "stasera": "this evening",
            "questa sera": "this evening",
            "ieri mattina": "yesterday morning",
            "ieri pomeriggio": "yesterday afternoon",
            "ieri sera": "yesterday evening",
            "ieri": "yesterday",
            "oggi": "today",
            "questa settimana": "this week",
            "questo mese": "this month",
            "quest'anno": "this year",
            "la settimana scorsa": "last week",
            "la scorsa settimana": "last week",
            "il mese scorso": "last month",
            "lo scorso mese": "last month",
            "l'anno scorso": "last year",
            "lo scorso anno": "last year",
            "lo scorso fine settimana": "last weekend",
            "il fine settimana scorso": "last weekend",
            "lo scorso weekend": "last weekend",
            "il weekend scorso": "last weekend",
            "questo fine settimana": "this weekend",
            "questo weekend": "this weekend",
        }
    ),  # fmt: skip
    _words(
        {"un paio di": "a couple of", "qualche": "a few", "alcuni": "a few", "alcune": "a few"}
    ),  # fmt: skip
    _words({w: str(n) for w, n in _IT_COMPOUND.items()}),
    *_numbers(_IT_SMALL, _IT_TENS, "{ten}{unit}"),
    _words(
        {
            "secondo": "second",
            "secondi": "seconds",
            "minuto": "minute",
            "minuti": "minutes",
            "ora": "hour",
            "ore": "hours",
            "giorno": "day",
            "giorni": "days",
            "giornata": "day",
            "settimana": "week",
            "settimane": "weeks",
            "mese": "month",
            "mesi": "months",
            "anno": "year",
            "anni": "years",
        }
    ),  # fmt: skip
    _rule(rf"(?<!\w)({_NUM})\s+(days?|weeks?|months?|years?)\s+fa(?!\w)", r"\1 \2 ago"),
    _rule(
        rf"(?<!\w)(?:negli|nelle|gli|le|durante\s+gli|durante\s+le)\s+(?:ultimi|ultime|"
        rf"scorsi|scorse)\s+({_NUM})\s+({_IT_UNITS})(?!\w)",
        r"the last \1 \2",
    ),
    _rule(
        rf"(?<!\w)(?:negli|nelle|gli|le)\s+(?:ultimi|ultime)\s+({_IT_UNITS})(?!\w)",
        r"the last few \1",
    ),
    _rule(
        rf"(?<!\w)(?:nell'|l'|nell'\s*|l'\s*|nel\s+|il\s+|durante\s+l'\s*)"
        rf"(?:ultima|ultimo)\s+({_IT_UNITS})(?!\w)",
        r"the last \1",
    ),
    _rule(
        rf"(?<!\w)({_alternatives(_IT_DAYS)})\s+scorso(?!\w)", lambda m: f"last {_IT_DAYS[m[1]]}"
    ),  # fmt: skip
    _rule(
        rf"(?<!\w)(?:lo\s+scorso|la\s+scorsa)\s+({_alternatives(_IT_DAYS)})(?!\w)",
        lambda m: f"last {_IT_DAYS[m[1]]}",
    ),  # fmt: skip
    _rule(
        rf"(?<!\w)(?:il\s+|la\s+)?(?:prossimo|prossima)\s+({_alternatives(_IT_DAYS)})(?!\w)",
        lambda m: f"next {_IT_DAYS[m[1]]}",
    ),  # fmt: skip
    _rule(
        rf"(?<!\w)({_alternatives(_IT_DAYS)})\s+(?:prossimo|prossima)(?!\w)",
        lambda m: f"next {_IT_DAYS[m[1]]}",
    ),  # fmt: skip
    _rule(
        rf"(?<!\w)ogni\s+({_alternatives(_IT_DAYS)})(?!\w)", lambda m: f"every {_IT_DAYS[m[1]]}"
    ),  # fmt: skip
    _rule(
        rf"(?<!\w)(?:lo\s+scorso\s+({_alternatives(_IT_MONTHS)})|"
        rf"({_alternatives(_IT_MONTHS)})\s+scorso)(?!\w)",
        lambda m: f"last {_IT_MONTHS[m[1] or m[2]]}",
    ),  # fmt: skip
    _rule(rf"(?<!\w)(?:a|ad|nel|in)\s+(?=(?:{_alternatives(_IT_MONTHS)}|\d{{4}}-)(?!\w))", "in "),
    _words({"da": "since", "dal": "since"}),
    _words({**_IT_DAYS, **_IT_MONTHS}),
)

LANGUAGES: dict[str, tuple[_Rule, ...]] = {
    "de": _GERMAN,
    "fr": _FRENCH,
    "nl": _DUTCH,
    "es": _SPANISH,
    "it": _ITALIAN,
}


def base_language(language: str | None) -> str:
    """A pipeline's language as these tables name it: "de-CH" and "de_AT" are "de"."""
    return (language or "en").replace("_", "-").split("-")[0].lower()


def in_english(lowered: str, language: str | None) -> str:
    """Lowered text of a language, its time words said in English (English as it is)."""
    rules = LANGUAGES.get(base_language(language), ())
    if rules:
        lowered = re.sub(r"\s+", " ", lowered)
    for pattern, replacement in rules:
        lowered = pattern.sub(replacement, lowered)
    return lowered
