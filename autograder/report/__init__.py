"""The class report: per-assignment figures (``class_report``), its page (``report_page``),
similar submissions (``similarity``) and the integrity review of a submission (``review``)."""
