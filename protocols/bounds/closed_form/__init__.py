"""Closed-form bounds: Erlingsson et al. (efmrtt), the blanket bounds of Balle et al. (blanket for
k-RR and the generic Hoeffding / Bennett bounds, blanket_randomizer for the per-randomizer ones),
the closed forms of Feldman, McMillan and Talwar (fmt21) and the mu-GDP bound of 003 (gdp)."""

#: The public API: the package's modules (import the one you need).
__all__ = ["blanket", "blanket_randomizer", "efmrtt", "fmt21", "gdp"]
