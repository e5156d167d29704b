"""Closed-form bounds: Erlingsson et al. (efmrtt), the blanket bounds of Balle et al. (blanket)
and the mu-GDP bound of 003 (gdp)."""
