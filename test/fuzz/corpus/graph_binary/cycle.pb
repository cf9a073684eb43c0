7
xplaceholder"
dtype("
shape2
ÿÿÿÿÿÿÿÿÿ
yaddxz
zreluy*
predict

xx
yy